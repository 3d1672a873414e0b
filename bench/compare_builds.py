#!/usr/bin/env python3
"""Two builds of ember side by side: the same benchmarks from BASE and NEW, alternating runs (which
build goes first flips every repetition), then a markdown table of medians and NEW / BASE ratios.

    python3 bench/compare_builds.py BASE_BUILD NEW_BUILD [--reps N] [--cnn-reps N] [--threads "1 2"]

Each build needs bench_overhead, bench_autograd and bench_train (or bench_train_ember). What is
compared: every ember row of bench_overhead and bench_autograd (microseconds per op, each run
itself a median over rounds), and the epoch time of bench_train's MLP and CNN (ember only), one
process per run. Used for refactors that must not change the speed (issue 11: within 5 %).
"""
import argparse, json, os, re, statistics, subprocess, sys

def ember_rows(out):
    """{case: ember microseconds} from a bench_overhead / bench_autograd markdown table."""
    rows = {}
    for line in out.splitlines():
        cells = [c.strip() for c in line.strip().strip('|').split('|')]
        if len(cells) < 3 or cells[0].startswith('---') or cells[0].startswith('op ') or cells[0].startswith('case'):
            continue
        name = cells[0]
        if name.startswith('libtorch'):
            continue
        try:
            rows[name] = float(cells[1])
        except ValueError:
            pass
    return rows

def run(cmd):
    env = dict(os.environ, OPENBLAS_NUM_THREADS='1')
    return subprocess.run(cmd, check=True, capture_output=True, text=True, env=env).stdout

def train_bin(build):
    b = os.path.join(build, 'bench', 'bench_train_ember')
    return b if os.path.exists(b) else os.path.join(build, 'bench', 'bench_train')

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('base'); ap.add_argument('new')
    ap.add_argument('--reps', type=int, default=5)
    ap.add_argument('--cnn-reps', type=int, default=3)
    ap.add_argument('--threads', default='1 2')
    ap.add_argument('--skip-train', action='store_true')
    a = ap.parse_args()
    builds = {'base': a.base, 'new': a.new}
    results = {}  # (bench, case) -> {'base': [...], 'new': [...]}
    def add(key, which, v):
        results.setdefault(key, {'base': [], 'new': []})[which].append(v)
    for rep in range(a.reps):
        order = ['base', 'new'] if rep % 2 == 0 else ['new', 'base']
        for which in order:
            b = builds[which]
            for prog, args in (('bench_overhead', ['9', '20000']), ('bench_autograd', ['9', '3000'])):
                out = run([os.path.join(b, 'bench', prog)] + args)
                for case, us in ember_rows(out).items():
                    add((prog, case), which, us)
    if not a.skip_train:
        for model, reps in (('mlp', a.reps), ('cnn', a.cnn_reps)):
            for threads in a.threads.split():
                for rep in range(reps):
                    order = ['base', 'new'] if rep % 2 == 0 else ['new', 'base']
                    for which in order:
                        out = run([train_bin(builds[which]), '--framework', 'ember', '--model', model,
                                   '--threads', threads, '--epochs', '1'])
                        j = json.loads(out.strip().splitlines()[-1])
                        add(('bench_train', f'{model} epoch, {threads} thread(s), s'), which, j['epoch_seconds'])
    print(f'| benchmark | case | base median | new median | new / base | runs |')
    print('|---|---|---|---|---|---|')
    for (prog, case), v in results.items():
        if not v['base'] or not v['new']:  # a case only one build has
            mb = f"{statistics.median(v['base']):.4g}" if v['base'] else 'n/a'
            mn = f"{statistics.median(v['new']):.4g}" if v['new'] else 'n/a'
            print(f'| {prog} | {case} | {mb} | {mn} | n/a | {len(v["base"])} + {len(v["new"])} |')
            continue
        mb, mn = statistics.median(v['base']), statistics.median(v['new'])
        print(f'| {prog} | {case} | {mb:.4g} | {mn:.4g} | {mn / mb:.3f} | {len(v["base"])} + {len(v["new"])} |')

if __name__ == '__main__':
    main()
