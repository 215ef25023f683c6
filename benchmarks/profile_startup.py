"""What the reference cache saves when a profile's detector is built (daemon start-up).

Builds a profile from a random-weight checkpoint of the chosen preset and N synthetic
references, then times, as CPU seconds of this process (median of ``--repeats``):

- the parts of ``Profile.build_detector``: the checkpoint's sha256, loading it, encoding
  the references, reading the cached encodings;
- ``build_detector`` as a whole without a cache file (encodes, then writes the cache)
  and with one (reads it).

Both detectors must give the same score bits for a query, which the script checks before
it reports anything. Weights are random: the cost of encoding does not depend on them.

    python benchmarks/profile_startup.py --preset paper --write-docs

With ``--metric compare`` it times a ``compare`` profile's ``build_detector`` instead (the
comparator and the references' cells; the checkpoint is the shipped preset's size, random
weights) and, with ``--against DIR``, the same steps run by the code of another checkout
of the project in a second process (``git worktree add DIR COMMIT``), which must give the
same score bits:

    git worktree add ../before 6cdb8a4
    python benchmarks/profile_startup.py --preset edge --metric compare --against ../before
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

# Idle OpenMP threads must sleep rather than spin, or CPU time would count the spinning.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import cv2
import torch

# The checkout whose code is timed: ``--code DIR`` (the process ``--against`` starts), else
# this script's own; read before the project is imported, since it decides which one is.
sys.path.insert(0, str(
    Path(sys.argv[sys.argv.index("--code") + 1]).resolve() if "--code" in sys.argv
    else Path(__file__).resolve().parent.parent
))  # fmt: skip

from benchmarks.common import markdown_table, print_json_line, smooth_photo, update_docs_section
from padformer_edge.detect.images import read_image
from padformer_edge.detect.service import load_references
from padformer_edge.detect.settings import DetectionSettings
from padformer_edge.methods.padformer.detector import Detector
from padformer_edge.methods.padformer.reference_cache import read_cache
from padformer_edge.model.checkpoint import file_sha256, load_checkpoint, save_checkpoint
from padformer_edge.model.padformer import build_model
from padformer_edge.profiles.create import create_profile
from padformer_edge.profiles.profile import load_profile


def cpu_seconds(action: Callable[[], object], repeats: int) -> float:
    """Median CPU time of ``action`` over ``repeats`` calls."""
    times = []
    for _ in range(repeats):
        start = time.process_time()
        action()
        times.append(time.process_time() - start)
    return statistics.median(times)


def make_sources(work: Path, args: argparse.Namespace) -> tuple[Path, int]:
    """A random-weight checkpoint of ``--preset`` and ``--references`` synthetic photos in
    ``work``: (the checkpoint, the model's input size)."""
    torch.manual_seed(0)
    model = build_model(args.preset)
    size = model.config.img_size
    checkpoint = work / "model.safetensors"
    save_checkpoint(checkpoint, model, {"note": "random weights, benchmark"})
    (work / "refs").mkdir()
    for index in range(args.references):
        cv2.imwrite(str(work / "refs" / f"{index}.png"), smooth_photo(size, index))
    return checkpoint, size


def compare_startup(args: argparse.Namespace) -> dict[str, float]:
    """``build_detector`` of a ``compare`` profile (median CPU seconds of ``--repeats``)
    and the score its detector gives a query, by the code first on ``sys.path``
    (``--code``); only steps every version of the project has (make, load, build, detect)."""
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        checkpoint, _ = make_sources(work, args)
        settings = DetectionSettings(passes=2, device="cpu", metric="compare")
        create_profile(work / "profiles", "bench", checkpoint, work / "refs", None, settings)
        profile = load_profile(work / "profiles", "bench")
        query = read_image(work / "refs" / "0.png")[:, ::-1].copy()
        score = profile.build_detector().detect([query])[0].score

        def first_start() -> object:
            profile.cache_path.unlink(missing_ok=True)  # what a profile's first start finds
            return restart()

        def restart() -> object:
            new_process()
            return profile.build_detector()

        first = cpu_seconds(first_start, args.repeats)
        seconds = cpu_seconds(restart, args.repeats)
    return {"build_detector": seconds, "first_start": first, "score": score}


def new_process() -> None:
    """Forget what this process keeps between detectors (the comparators the code of
    this checkout shares; none in code before it), so that each repeat costs what a
    daemon's start does."""
    try:
        from padformer_edge.methods.compare.checkpoint import forget_shared_comparators
    except ImportError:  # code from before the comparators were shared
        return
    forget_shared_comparators()


def against(args: argparse.Namespace) -> dict[str, float]:
    """``compare_startup`` run by the code of the checkout ``--against`` in a new process."""
    command = [sys.executable, __file__, "--preset", args.preset, "--metric", "compare",
               "--references", str(args.references), "--repeats", str(args.repeats),
               "--threads", str(args.threads), "--code", args.against, "--json-only"]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"the run on {args.against} failed:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def report_compare(args: argparse.Namespace) -> None:
    """The ``--metric compare`` table: this checkout, and the one ``--against`` names."""
    here = compare_startup(args)
    if args.json_only:
        print(json.dumps(here))
        return
    rows = [("this checkout", here["build_detector"], here["first_start"])]
    payload: dict[str, object] = {"preset": args.preset, "references": args.references,
                                  "threads": args.threads, "build_detector": here}  # fmt: skip
    note = (
        f"A `compare` profile's `build_detector`: {args.preset} preset checkpoint (random "
        f"weights, not read by the comparison), the shipped default comparator, "
        f"{args.references} references, {args.threads} thread(s), median of {args.repeats} "
        "CPU seconds."
    )
    if args.against:
        other = against(args)
        if other["score"] != here["score"]:
            raise SystemExit(
                f"the two checkouts score the query differently ({other['score']!r} against "
                f"{here['score']!r}): the comparison is not the same computation."
            )
        commit = subprocess.run(
            ["git", "-C", args.against, "rev-parse", "--short", "HEAD"],
            capture_output=True, text=True, check=False,
        ).stdout.strip() or "the other checkout"  # fmt: skip
        rows.append((f"checkout {commit}", other["build_detector"], other["first_start"]))
        speedup = other["build_detector"] / here["build_detector"]
        note += (
            f" Measured in one run, each in its own process; both give the query the same "
            f"score bits. A restart (the cache file in place) of this checkout is "
            f"{speedup:.2f}x faster than {commit}'s; a first start "
            f"{other['first_start'] / here['first_start']:.2f}x."
        )
        payload |= {"against": commit, "against_build_detector": other, "speedup": speedup}
    table = markdown_table(["code", "build_detector CPU s", "first start (no cache file)"], rows)
    print(table)
    print()
    print(note)
    if args.write_docs:
        update_docs_section("profile_startup_compare", f"{table}\n\n{note}")
    print_json_line("profile_startup_compare", payload)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--preset", default="paper", choices=["tiny", "small", "paper", "edge"])
    parser.add_argument("--references", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument(
        "--metric", default="auto", choices=["auto", "compare"],
        help="auto: the preset's PADFormer score (the cache's job); compare: the learned "
        "comparison's profile start-up",
    )  # fmt: skip
    parser.add_argument(
        "--against", default=None,
        help="with --metric compare: another checkout of the project (git worktree add DIR "
        "COMMIT) whose code is timed the same way in a second process",
    )  # fmt: skip
    parser.add_argument("--code", default=None, help=argparse.SUPPRESS)  # read at the top
    parser.add_argument("--json-only", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--write-docs", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    if args.metric == "compare":
        report_compare(args)
        return
    if args.against:
        parser.error("--against times a compare profile: add --metric compare")
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        checkpoint, size = make_sources(work, args)
        settings = DetectionSettings(passes=2, device="cpu", metric=args.metric)  # start-up
        create_profile(work / "profiles", "bench", checkpoint, work / "refs", None, settings)
        profile = load_profile(work / "profiles", "bench")
        query = read_image(work / "refs" / "0.png")[:, ::-1].copy()

        def cold() -> Detector:
            profile.cache_path.unlink(missing_ok=True)
            return profile.build_detector()

        cold_score = cold().detect([query])[0].score
        warm_detector = profile.build_detector()
        assert getattr(warm_detector, "cache_hit", False), "the cache was not used"
        assert warm_detector.detect([query])[0].score == cold_score, "cache changed the score"
        loaded, _ = load_checkpoint(checkpoint)
        plain = Detector(loaded, load_references(work / "refs"), settings)
        images = load_references(work / "refs")
        key = profile.reference_key()
        parts = {
            "checkpoint sha256": cpu_seconds(lambda: file_sha256(checkpoint), args.repeats),
            "load checkpoint": cpu_seconds(lambda: load_checkpoint(checkpoint), args.repeats),
            f"encode {args.references} references": cpu_seconds(
                lambda: plain.encode_references(images), args.repeats
            ),
            "read cached encodings": cpu_seconds(
                lambda: read_cache(profile.cache_path, key, loaded, torch.device("cpu")),
                args.repeats,
            ),
        }
        totals = {
            "build_detector, no cache": cpu_seconds(cold, args.repeats),
            "build_detector, cached": cpu_seconds(profile.build_detector, args.repeats),
        }
        megabytes = checkpoint.stat().st_size / 1e6
    speedup = totals["build_detector, no cache"] / totals["build_detector, cached"]
    encode_s = parts[f"encode {args.references} references"]
    read_s = parts["read cached encodings"]
    rows = [(name, seconds) for name, seconds in {**parts, **totals}.items()]
    table = markdown_table(["step", "CPU s"], rows)
    note = (
        f"{args.preset} preset ({size} px, checkpoint {megabytes:.0f} MB, random weights), "
        f"{args.references} references, {args.threads} thread(s), median of {args.repeats}. "
        f"Reading the cached encodings costs {read_s * 1e3:.2f} ms of CPU against "
        f"{encode_s * 1e3:.0f} ms to encode them; the whole start-up is {speedup:.2f}x "
        "faster with the cache (the rest is hashing and loading the checkpoint)."
    )
    print(table)
    print()
    print(note)
    if args.write_docs:
        update_docs_section("profile_startup", f"{table}\n\n{note}")
    print_json_line(
        "profile_startup",
        {"preset": args.preset, "references": args.references, "threads": args.threads,
         "checkpoint_mb": megabytes, "steps": {**parts, **totals},
         "startup_speedup": speedup},
    )  # fmt: skip


if __name__ == "__main__":
    main()
