"""What a line PC runs, timed in a process without torch: ``LineDetector`` on profiles.

``detect_speed.py --runtimes`` starts it for its ``line:`` rows after making the profiles
(``profile create`` needs torch; this process must not load it: where torch is loaded,
numpy's BLAS threads compete with torch's and the numpy scoring runs several times
slower than on a torch-free line install). Each profile's detector scores the same
smooth query as the other rows; the profiles are timed in turns. Prints one JSON line:
per profile, the median CPU s and fastest wall s of a detection, the CPU s of the passes
alone (``LineDetector.reconstruct``) and the score.

    python benchmarks/line_timing.py --profiles DIR --profile NAME [--profile NAME...] \\
        --size 192 --query-seed 100 --repeats 3
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import interleaved, smooth_photo


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profiles", type=Path, required=True, help="the profiles folder")
    parser.add_argument("--profile", action="append", required=True, help="repeat")
    parser.add_argument("--size", type=int, required=True, help="the query's side, px")
    parser.add_argument("--query-seed", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    from padformer_edge.detect.numpy_ops import unit_image
    from padformer_edge.profiles.profile import load_profile

    query = smooth_photo(args.size, seed=args.query_seed)
    detectors = {
        name: load_profile(args.profiles, name).build_detector(calibrating=True)
        for name in args.profile
    }
    scores = {name: detector.detect([query])[0].score for name, detector in detectors.items()}
    calls = {}
    for name, detector in detectors.items():
        model_in = detector.model_input(unit_image(query))
        calls[name, "detect"] = lambda d=detector: d.detect([query])
        calls[name, "passes"] = lambda d=detector, q=model_in: d.reconstruct(q)
    measured = interleaved(calls, args.repeats)
    if "torch" in sys.modules:
        raise SystemExit("torch was loaded; these rows must time a torch-free process.")
    rows = {
        name: {
            "cpu_s": measured[name, "detect"][0],
            "wall_s": measured[name, "detect"][1],
            "passes_cpu_s": measured[name, "passes"][0],
            "score": scores[name],
        }
        for name in detectors
    }
    print(json.dumps({"benchmark": "line_timing", "rows": rows}))


if __name__ == "__main__":
    main()
