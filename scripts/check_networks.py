"""Checks that networks of torchvision, timm and Hugging Face transformers import through tcl
(``torch.export``, TVM's PyTorch importer with tcl's converters) and compile to what PyTorch
computes: each network, randomly initialised (weights its library starts at zero drawn at
random too, so that no output is zeros), is run by PyTorch eager and by its untuned TVM build
for this CPU on random inputs, and the largest difference of the first outputs is compared with
1e-2 of the largest output, the tolerance of ``tcl tune``'s output check. One JSON line per
network, each in a fresh process (a crash or a hang is that network's result); a summary line
last.

Usage: python scripts/check_networks.py [--torchvision NAME ...] [--timm NAME ...]
       [--transformers NAME ...] [--timeout 900]

A source named alone (``--transformers``) checks its default list, and the others are left out
unless named too; with none named, all three lists. Needs ``torchvision``, ``timm`` and
``transformers`` (``pip install torchvision==0.28.0 timm transformers``; not tcl's
dependencies); the Hugging Face networks are built as ``hf_networks.py`` says. Where
torchvision's compiled operators do not load against torch's CPU build (its PyPI wheel is built
for CUDA), they are left out: detection's ``nms`` and ``roi_align``, which none of these
networks use.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from typing import Any

# Small members of each family, image networks at their own input sizes
TORCHVISION = [
    "alexnet",
    "convnext_tiny",
    "densenet121",
    "efficientnet_b0",
    "efficientnet_v2_s",
    "googlenet",
    "inception_v3",
    "maxvit_t",
    "mnasnet0_5",
    "mobilenet_v3_large",
    "mobilenet_v3_small",
    "regnet_x_400mf",
    "regnet_y_400mf",
    "resnext50_32x4d",
    "shufflenet_v2_x1_0",
    "squeezenet1_1",
    "swin_t",
    "swin_v2_t",
    "vgg11_bn",
    "vit_b_32",
    "wide_resnet50_2",
    "deeplabv3_mobilenet_v3_large",
    "lraspp_mobilenet_v3_large",
    "fcn_resnet50",
    "r3d_18",
    "r2plus1d_18",
    "s3d",
    "mvit_v2_s",
    "swin3d_t",
]
TIMM = [
    "levit_128s",
    "poolformer_s12",
    "mobilevit_xxs",
    "mobilevitv2_050",
    "efficientformer_l1",
    "efficientformerv2_s0",
    "edgenext_xx_small",
    "ghostnet_100",
    "ghostnetv2_100",
    "repvgg_a0",
    "hrnet_w18_small",
    "cspdarknet53",
    "dla34",
    "dpn68",
    "res2net50_14w_8s",
    "resnest14d",
    "skresnet18",
    "selecsls42b",
    "rexnet_100",
    "lcnet_050",
    "mixnet_s",
    "hardcorenas_a",
    "deit_tiny_patch16_224",
    "cait_xxs24_224",
    "coat_lite_tiny",
    "convit_tiny",
    "crossvit_tiny_240",
    "pit_ti_224",
    "twins_svt_small",
    "xcit_nano_12_p16_224",
    "eva02_tiny_patch14_224",
    "gmlp_ti16_224",
    "resmlp_12_224",
    "inception_next_tiny",
    "fastvit_t8",
    "mobileone_s0",
    "efficientvit_b0",
    "efficientvit_m0",
    "tiny_vit_5m_224",
    "nextvit_small",
    "regnetz_b16",
    "nfnet_l0",
    "sequencer2d_s",
    "visformer_tiny",
    "gcvit_xxtiny",
    "davit_tiny",
    "focalnet_tiny_srf",
    "hgnet_tiny",
    "ese_vovnet19b_dw",
    "mobilenetv4_conv_small",
    "starnet_s1",
    "hiera_tiny_224",
    "repghostnet_050",
    "beit_base_patch16_224",
    "vit_small_patch16_224",
    "swinv2_cr_tiny_224",
    "convnextv2_atto",
    "pvt_v2_b0",
    "volo_d1_224",
    "mambaout_femto",
]
VIDEO_INPUTS = {  # (frames, height, width) of torchvision's video networks
    "r3d_18": (8, 112, 112),
    "mc3_18": (8, 112, 112),
    "r2plus1d_18": (8, 112, 112),
    "s3d": (16, 224, 224),
    "mvit_v1_b": (16, 224, 224),
    "mvit_v2_s": (16, 224, 224),
    "swin3d_t": (8, 224, 224),
}


def import_torchvision() -> Any:
    """torchvision's models, its compiled operators left out where they do not load (the fake
    kernels it registers for them then have no operator to attach to)."""
    import torch

    register = torch.library.register_fake
    torch.library.register_fake = lambda *a, **k: lambda f: f  # type: ignore[assignment]
    try:
        import torchvision.models
    finally:
        torch.library.register_fake = register
    return torchvision.models


def network(source: str, name: str) -> tuple[Any, tuple[Any, ...]]:
    """``(module, inputs)`` of a network, randomly initialised, in eval mode."""
    import torch

    if source == "transformers":
        from hf_networks import network as hf_network

        return hf_network(name)
    model, x = _initialised(source, name)

    with torch.no_grad():  # zero-initialised weights (classifier heads) would zero the output
        for weight in model.parameters():
            if weight.numel() > 1 and not weight.any():
                weight.normal_(0.0, 0.02)
    return model, (x,)


def _initialised(source: str, name: str) -> tuple[Any, Any]:
    import torch

    torch.manual_seed(0)
    if source == "timm":
        import_torchvision()  # timm imports it
        import timm

        model = timm.create_model(name, pretrained=False).eval()
        return model, torch.randn(1, *model.pretrained_cfg["input_size"])
    models = import_torchvision()
    options: dict[str, Any] = {"weights": None}
    if name.startswith(("deeplab", "lraspp", "fcn")):
        options["weights_backbone"] = None
    if name in ("inception_v3", "googlenet"):
        options.update(aux_logits=False, init_weights=True)
    model = models.get_model(name, **options).eval()
    size = 299 if name == "inception_v3" else 224
    shape = (3, *VIDEO_INPUTS[name]) if name in VIDEO_INPUTS else (3, size, size)
    return model, torch.randn(1, *shape)


def first_output(out: Any) -> Any:
    while isinstance(out, (tuple, list)):
        out = out[0]
    return next(iter(out.values())) if isinstance(out, dict) else out


def check(source: str, name: str) -> dict[str, Any]:
    """In this process: one network imported, compiled and compared with PyTorch."""
    import numpy as np
    import torch
    import tvm
    from tvm import relax

    from tcl.zoo.extract import export_program, import_program

    result: dict[str, Any] = {"source": source, "network": name, "stage": "load"}
    try:
        model, inputs = network(source, name)
        with torch.no_grad():
            expected = first_output(model(*inputs)).numpy()
        result["stage"] = "import"
        mod = import_program(export_program(model, inputs))
        result["stage"] = "compile"
        vm = relax.VirtualMachine(tvm.compile(mod, target="llvm"), tvm.cpu())
        result["stage"] = "run"
        out = vm["main"](*[tvm.runtime.tensor(x.numpy()) for x in inputs])
        while not hasattr(out, "numpy"):
            out = out[0]
        got = out.numpy()
    except Exception as err:  # the stage and TVM's or torch's first line
        result["error"] = f"{type(err).__name__}: {str(err).strip().splitlines()[0][:300]}"
        return result
    scale = float(np.abs(expected).max())
    diff = float(np.abs(got - expected).max()) if got.shape == expected.shape else float("inf")
    result.update(stage="done", max_abs_error=diff, output_scale=scale)
    result["right"] = diff <= 1e-2 * scale
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--torchvision", nargs="*", default=None, help="names (default: a list)")
    parser.add_argument("--timm", nargs="*", default=None, help="names (default: a list)")
    parser.add_argument("--transformers", nargs="*", default=None, help="names (default: all)")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds a network")
    parser.add_argument("--one", nargs=2, metavar=("SOURCE", "NAME"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(check(*args.one)), flush=True)
        return
    from hf_networks import NETWORKS as TRANSFORMERS

    lists = {"torchvision": TORCHVISION, "timm": TIMM, "transformers": list(TRANSFORMERS)}
    named = {source: getattr(args, source) for source in lists}
    if all(names is None for names in named.values()):
        named = {source: [] for source in lists}  # every source, each its list
    chosen = [
        (source, name)
        for source, names in named.items()
        if names is not None
        for name in (names or lists[source])
    ]
    right = 0
    for source, name in chosen:
        start = time.perf_counter()
        command = [sys.executable, __file__, "--one", source, name]
        try:
            run = subprocess.run(command, capture_output=True, text=True, timeout=args.timeout)
            lines = [line for line in run.stdout.splitlines() if line.startswith("{")]
            result = (
                json.loads(lines[-1])
                if lines
                else {"source": source, "network": name, "error": f"exit status {run.returncode}"}
            )
        except subprocess.TimeoutExpired:
            result = {"source": source, "network": name, "error": f"over {args.timeout:.0f} s"}
        result["seconds"] = round(time.perf_counter() - start, 1)
        right += bool(result.get("right"))
        print(json.dumps(result), flush=True)
    print(json.dumps({"networks": len(chosen), "right": right}), flush=True)


if __name__ == "__main__":
    main()
