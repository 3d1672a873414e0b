#!/usr/bin/env bash
# clang-tidy (the checks of .clang-tidy, every warning an error) over ember's C++ files.
#
#   bash scripts/tidy.sh                      # every translation unit of the build
#   bash scripts/tidy.sh --since origin/main  # only the C++ files changed since a git revision
#   options: -p BUILD_DIR (default: build; needs its compile_commands.json), -j JOBS (nproc),
#            --exclude REGEX (skip the files whose path matches, an extended regex),
#            --list (print the files it would check, and stop)
#
# A changed header is checked through its own .cpp (core/tensor.h through core/tensor.cpp)
# where there is one, else through the files that include it; diagnostics inside ember's
# headers are reported for every translation unit that includes them (HeaderFilterRegex in
# .clang-tidy). Exits non-zero on any warning.
set -euo pipefail
cd "$(dirname "$0")/.."

build=build
since=""
exclude=""
jobs=$(nproc)
list=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    -p) build="$2"; shift 2 ;;
    -j) jobs="$2"; shift 2 ;;
    --since) since="$2"; shift 2 ;;
    --exclude) exclude="$2"; shift 2 ;;
    --list) list=1; shift ;;
    *) echo "tidy.sh: unknown argument '$1' (see the comment at the top)" >&2; exit 2 ;;
  esac
done

tidy=$(command -v clang-tidy-14 || command -v clang-tidy || true)
if [[ -z "$tidy" ]]; then
  echo "tidy.sh: clang-tidy-14 not found (apt-get install clang-tidy-14)" >&2
  exit 2
fi
db="$build/compile_commands.json"
if [[ ! -f "$db" ]]; then
  echo "tidy.sh: $db not found: configure first (cmake --preset release)" >&2
  exit 2
fi

# The repository's own translation units in the database, relative to the root (not the
# build tree's generated files).
root=$(pwd)
mapfile -t units < <(python3 - "$db" "$root" <<'EOF'
import json, os, sys
db, root = sys.argv[1], sys.argv[2]
seen = set()
for entry in json.load(open(db)):
    path = os.path.normpath(os.path.join(entry["directory"], entry["file"]))
    rel = os.path.relpath(path, root)
    if rel.startswith("..") or rel.startswith("build") or rel in seen:
        continue
    seen.add(rel)
    print(rel)
EOF
)

if [[ -n "$since" ]]; then
  if ! git rev-parse --verify --quiet "$since^{commit}" > /dev/null; then
    echo "tidy.sh: --since $since is not a git revision" >&2
    exit 2
  fi
  declare -A in_db=()
  for u in "${units[@]}"; do in_db["$u"]=1; done
  declare -A pick=()
  while IFS= read -r f; do
    case "$f" in
      *.cpp | *.cu) [[ -n "${in_db[$f]:-}" ]] && pick["$f"]=1 ;;
      *.h | *.cuh)
        if [[ -n "${in_db[${f%.h}.cpp]:-}" ]]; then
          pick["${f%.h}.cpp"]=1
        else  # an internal header (kernels/cpu/conv_utils.h, tests/golden.h): its includers
          while IFS= read -r u; do
            [[ -n "${in_db[$u]:-}" ]] && pick["$u"]=1
          done < <(git grep -l -F -e "#include \"$f\"" -e "#include \"$(basename "$f")\"" \
                     -- '*.cpp' '*.cu')
        fi
        ;;
    esac
  done < <(git diff --name-only --diff-filter=ACMR "$since" -- '*.cpp' '*.h' '*.cu' '*.cuh')
  units=("${!pick[@]}")
  if [[ ${#units[@]} -eq 0 ]]; then
    echo "tidy.sh: no C++ translation unit changed since $since"
    exit 0
  fi
fi

if [[ -n "$exclude" ]]; then
  kept=()
  for u in "${units[@]}"; do [[ "$u" =~ $exclude ]] || kept+=("$u"); done
  units=("${kept[@]}")
fi

if [[ $list -eq 1 ]]; then
  printf '%s\n' "${units[@]}" | sort
  exit 0
fi
echo "tidy.sh: clang-tidy over ${#units[@]} files, $jobs at a time ($build)"
start=$(date +%s)
status=0
# Without EMBER_HAVE_LIBTORCH the benchmarks skip their libtorch side: parsing torch's headers
# would take minutes per file, and that code is the reference, not ember's. The grep drops
# clang's "N warnings generated." counts (of the suppressed warnings in system headers).
# -Wno-error: the ci build compiles with -Werror for GCC, and clang's own warnings (another
# compiler's set, e.g. -Wbitwise-conditional-parentheses on ember's branch-free masks) must not
# turn into compile errors here: this step reports the checks of .clang-tidy, which GCC's
# -Wall -Wextra -Werror build does not cover.
printf '%s\0' "${units[@]}" |
  xargs -0 -n 1 -P "$jobs" "$tidy" -p "$build" --quiet --extra-arg=-UEMBER_HAVE_LIBTORCH \
    --extra-arg=-Wno-error \
    2> >(grep -v -E '^[0-9]+ warnings? generated\.$' >&2) || status=$?
echo "tidy.sh: finished in $(( $(date +%s) - start )) s"
if [[ $status -ne 0 ]]; then
  echo "tidy.sh: clang-tidy found problems (above)" >&2
  exit 1
fi
