"""State-dict interop between ember and PyTorch (tests/test_checkpoint.cpp, tag [checkpoint]).

The model, in both: torch.nn.Sequential(Conv2d(1, 4, 3, padding=1), BatchNorm2d(4), ReLU(),
MaxPool2d(2), Flatten(), Linear(64, 3)) in eval mode, on an input of shape (2, 1, 8, 8).
Each file's metadata holds the input ("check.input", comma-separated, %.9g) and the model's
output on it ("check.output").

  /usr/bin/python3 tests/golden/gen_checkpoint.py
      writes tests/golden/checkpoint_torch.safetensors: a PyTorch state dict that the suite
      loads into the ember model (strictly) and whose output it compares.
  EMBER_CKPT_EXPORT=/tmp/ember_model.safetensors build/tests/ember_tests "[checkpoint]"
  /usr/bin/python3 tests/golden/gen_checkpoint.py --check /tmp/ember_model.safetensors
      loads ember's export into the torch model with load_state_dict(strict=True), runs the
      forward on the saved input and compares with ember's output; exits 1 on a mismatch.
"""

import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_io  # noqa: E402

INPUT_SHAPE = (2, 1, 8, 8)


def make_model():
    return torch.nn.Sequential(
        torch.nn.Conv2d(1, 4, 3, padding=1),
        torch.nn.BatchNorm2d(4),
        torch.nn.ReLU(),
        torch.nn.MaxPool2d(2),
        torch.nn.Flatten(),
        torch.nn.Linear(64, 3),
    )


def floats(t):
    return ",".join("%.9g" % v for v in t.detach().double().flatten().tolist())


def parse(text):
    return torch.tensor([float(v) for v in text.split(",")], dtype=torch.float64)


def generate(path):
    torch.manual_seed(0)
    model = make_model()
    model(torch.randn(8, *INPUT_SHAPE[1:]) * 2 + 0.5)  # training mode: moves the BN statistics
    model.eval()
    x = torch.randn(*INPUT_SHAPE)
    with torch.no_grad():
        y = model(x)
    meta = {
        "check.input": floats(x),
        "check.input_shape": ",".join(str(s) for s in INPUT_SHAPE),
        "check.output": floats(y),
    }
    safetensors_io.save(dict(model.state_dict()), path, meta)
    print("wrote", path)


def check(path):
    tensors, meta = safetensors_io.load(path)
    model = make_model()
    model.load_state_dict(tensors, strict=True)  # every key, shape and dtype must fit
    model.eval()
    shape = tuple(int(s) for s in meta["check.input_shape"].split(","))
    x = parse(meta["check.input"]).reshape(shape).float()
    with torch.no_grad():
        got = model(x).double().flatten()
    want = parse(meta["check.output"])
    err = (got - want).abs().max().item()
    print("%s: %d tensors loaded strictly into torch.nn.Sequential; output max |diff| = %.3g"
          % (path, len(tensors), err))
    if not torch.allclose(got, want, rtol=1e-5, atol=1e-5):
        print("MISMATCH: torch", got.tolist(), "ember", want.tolist())
        return 1
    print("OK")
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--check":
        sys.exit(check(sys.argv[2]))
    if len(sys.argv) == 1:
        generate(os.path.join(os.path.dirname(os.path.abspath(__file__)),
                              "checkpoint_torch.safetensors"))
        sys.exit(0)
    print(__doc__)
    sys.exit(2)
