"""Drift watch on synthetic score streams: images until the drift alert, and false drift alerts.

What the streams are made of: scores drawn from a stated distribution (gamma by default,
right-skewed as anomaly scores are), not from rendered views scored by the model. Each
simulated profile draws its own calibration set (``--calibration`` good scores, the
threshold set from them by ``profiles.thresholds.false_alarm_threshold`` at
``--target-fpr``), then:

* unshifted streams: ``--unshifted-images`` more scores from the same distribution, cut
  into the daemon's non-overlapping windows; every window whose test fires is a false
  drift alert (counted as if each were acknowledged at once, the most alerts possible);
* shifted streams: after a random number of unshifted images (so the shift starts at any
  point of a window), every score moves up by ``shift`` standard deviations of the good
  scores; the figure is the number of images from the shift to the alert.

The tests are the daemon's own (``daemon.drift_statistics`` on the window, ``DriftConfig`` for
the level), run in batches; the first profile's streams are also fed through the
daemon's ``DriftMonitor`` one score at a time and must alert at the same images. How a
real change of lighting moves the model's scores is not measured here: that needs
rendered views scored by the shipped model, so the shift is given in score units.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import markdown_table, print_json_line, update_docs_section
from padformer_edge.daemon.drift import DriftMonitor, WindowTests
from padformer_edge.daemon.drift_statistics import ks_statistics
from padformer_edge.daemon.settings import DriftConfig
from padformer_edge.images.image_stats import BY_NAME, NAMES, statistics_table
from padformer_edge.profiles.thresholds import false_alarm_threshold

CHUNK = 2000  # windows tested at once: bounded memory


def draw(rng: np.random.Generator, kind: str, size: int | tuple[int, ...]) -> np.ndarray:
    """Good-part scores of the stated distribution, scaled to standard deviation 1."""
    if kind == "gamma":
        return rng.gamma(4.0, 0.5, size)  # shape 4, scale 0.5: sd 1, mean 2
    if kind == "lognormal":
        sigma = 0.5
        return rng.lognormal(0.0, sigma, size) / math.sqrt((math.exp(sigma**2) - 1)
                                                           * math.exp(sigma**2))  # fmt: skip
    return rng.normal(0.0, 1.0, size)


def shared(tests: WindowTests, config: DriftConfig, share: int) -> WindowTests:
    """``tests`` at the level a window of ``share`` tests gives each (``--tests``): the
    score tests of a profile with image statistics share the window with three more."""
    if share < tests.tests:
        raise SystemExit(f"error: --tests {share} is fewer than the {tests.tests} tests run")
    tests.level = config.level(share)
    return tests


def share_words(share: int) -> str:
    return {2: "the two score tests of a profile calibrated without image statistics",
            5: "the two score tests and three image tests of a profile calibrated with "
               "image statistics"}.get(share, f"{share} tests per window")  # fmt: skip


def window_alerts(
    tests: WindowTests, threshold: float, windows: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Per window (rows): did the KS test fire, did the binomial test fire."""
    ks = np.zeros(len(windows), dtype=bool)
    binomial = np.zeros(len(windows), dtype=bool)
    for start in range(0, len(windows), CHUNK):
        part = windows[start : start + CHUNK]
        if tests.reference is not None:
            ks[start : start + CHUNK] = tests.score_p_values(part)[1] < tests.level
        flagged = (part > threshold).sum(axis=1)
        binomial[start : start + CHUNK] = tests.tail[flagged] < tests.level
    return ks, binomial


def order_quantile(values: np.ndarray, q: float) -> float:
    """The smallest value with at least ``q`` of ``values`` at or below it (no
    interpolation, so an undetected stream, infinite, counts as the longest wait)."""
    ordered = np.sort(values)
    return float(ordered[max(math.ceil(q * ordered.size) - 1, 0)])


def poisson_upper(events: int, exposure: float, confidence: float = 0.95) -> float:
    """One-sided upper confidence bound of a Poisson rate (events per unit exposure)."""
    low, high = 0.0, (events + 10.0 + 10.0 * math.sqrt(events + 1)) / exposure
    for _ in range(100):
        mid = (low + high) / 2
        mean = mid * exposure
        cdf = sum(math.exp(-mean + k * math.log(mean) - math.lgamma(k + 1))
                  for k in range(events + 1)) if mean > 0 else 1.0  # fmt: skip
        low, high = (mid, high) if cdf > 1 - confidence else (low, mid)
    return high


def monitor_alerts(config: DriftConfig, good: np.ndarray, target: float, threshold: float,
                   stream: np.ndarray) -> list[int]:  # fmt: skip
    """The images at which the daemon's own monitor, fed one score at a time, alerts."""
    monitor = DriftMonitor(config)
    good_list = good.tolist()
    return [
        i for i, score in enumerate(stream.tolist())
        if monitor.observe("cam", "bench", score, score > threshold, good_list, target,
                           threshold)
    ]  # fmt: skip


def delay_rows(
    delays: dict[str, list[float]], args: argparse.Namespace, undetected: str | None = None
) -> tuple[list, dict]:
    """Table rows and JSON of images-to-alert per labelled stream kind; ``undetected``
    is what a quantile among the streams that never alerted reads (default: more than
    ``--max-images``)."""

    def shown(value: float) -> float | str:
        return value if math.isfinite(value) else undetected or f"> {args.max_images}"

    shift_rows, shift_json = [], {}
    for label, found in delays.items():
        d = np.asarray(found)
        within = float((d <= args.within).mean())
        finite = d[np.isfinite(d)]
        median, p95 = order_quantile(d, 0.5), order_quantile(d, 0.95)
        shift_rows.append([label, d.size, f"{within:.1%}", shown(median),
                           shown(p95), int(d.size - finite.size)])  # fmt: skip
        shift_json[label] = {  # null: no alert within --max-images
            "streams": int(d.size), "within": within,
            "median": median if math.isfinite(median) else None,
            "p95": p95 if math.isfinite(p95) else None,
            "undetected": int(d.size - finite.size),
        }  # fmt: skip
    return shift_rows, shift_json


def images_to_alert(
    tests: WindowTests, threshold: float, before: np.ndarray, after: np.ndarray
) -> float:
    """Images from the first of ``after`` to the alert on ``before`` then ``after`` (an
    incomplete last window is never tested, as in the daemon); inf when none comes."""
    w = tests.window
    scores = np.concatenate([before, after])
    scores = scores[: scores.size - scores.size % w]
    ks, binomial = window_alerts(tests, threshold, scores.reshape(-1, w))
    ends = np.flatnonzero(ks | binomial) * w + w - 1
    later = ends[ends >= before.size]
    return float(later[0] - before.size + 1) if later.size else math.inf


def run(args: argparse.Namespace) -> dict:
    config = DriftConfig(window=args.window, false_alert_rate=args.rate)
    rng = np.random.default_rng(args.seed)
    w = config.window
    per_profile_windows = args.unshifted_images // w
    false_ks = false_binomial = false_any = 0
    per_profile_rates = []
    delays: dict[float, list[float]] = {s: [] for s in args.shift}
    agreed = True
    for profile in range(args.profiles):
        good = draw(rng, args.distribution, args.calibration)
        threshold = false_alarm_threshold(good, args.target_fpr).value
        tests = shared(WindowTests(config, good.tolist(), args.target_fpr, threshold),
                       config, args.tests)  # fmt: skip
        stream = draw(rng, args.distribution, per_profile_windows * w)
        ks, binomial = window_alerts(tests, threshold, stream.reshape(-1, w))
        false_ks += int(ks.sum())
        false_binomial += int(binomial.sum())
        fired = ks | binomial
        false_any += int(fired.sum())
        per_profile_rates.append(fired.sum() / (per_profile_windows * w))
        if profile == 0:  # the batched tests against the daemon's monitor, score by score
            # (the monitor, given scores only, runs the two score tests at their own share)
            own = WindowTests(config, good.tolist(), args.target_fpr, threshold)
            ks, binomial = window_alerts(own, threshold, stream.reshape(-1, w))
            expected = [int(i) * w + w - 1 for i in np.flatnonzero(ks | binomial)]
            agreed &= monitor_alerts(config, good, args.target_fpr, threshold,
                                     stream) == expected  # fmt: skip
        for shift in args.shift:
            for _ in range(args.shifted_streams // args.profiles or 1):
                lead = int(rng.integers(w, 2 * w))  # the shift starts anywhere in a window
                before = draw(rng, args.distribution, lead)
                after = draw(rng, args.distribution, args.max_images) + shift
                delays[shift].append(images_to_alert(tests, threshold, before, after))
    images = args.profiles * per_profile_windows * w
    rate = false_any / images
    upper = poisson_upper(false_any, images)
    rates = np.asarray(per_profile_rates)
    shift_rows, shift_json = delay_rows(
        {f"+{shift:g} sd": found for shift, found in delays.items()}, args
    )
    false_table = markdown_table(
        ["unshifted images", "windows", "false drift alerts (KS / binomial)",
         "per 10,000 images", "95% upper bound", "stated level",
         "worst calibration set", "90th percentile of sets"],
        [[f"{images:,}", f"{images // w:,}", f"{false_any} ({false_ks} / {false_binomial})",
          rate * 1e4, upper * 1e4, config.false_alert_rate * 1e4,
          float(rates.max()) * 1e4, float(np.quantile(rates, 0.9)) * 1e4]],
    )  # fmt: skip
    shift_table = markdown_table(
        ["shift from the start", "streams", f"alert within {args.within} images",
         "median images to alert", "95th percentile", f"no alert in {args.max_images}"],
        shift_rows,
    )  # fmt: skip
    verdict_rate = "met" if upper <= config.false_alert_rate else (
        "met on the estimate, not on its upper bound" if rate <= config.false_alert_rate
        else "not met")  # fmt: skip
    text = (
        f"{args.profiles} calibration sets of {args.calibration} {args.distribution} scores "
        f"(standard deviation 1; threshold at a {args.target_fpr:g} false-alarm rate), "
        f"windows of {w} images, each test at {config.level(args.tests):g} "
        f"(false_alert_rate {config.false_alert_rate:g} x window / {args.tests}: "
        f"{share_words(args.tests)}). False drift alerts "
        f"per 10,000 unshifted images against the stated level: {verdict_rate} (the rate "
        "is an average over calibration sets; the columns on the right show how it "
        "varies with the calibration set a line happens to have). The batched tests "
        "alerted at the same images as the daemon's DriftMonitor fed one score at a "
        f"time: {'yes' if agreed else 'NO'}. Shifts are in standard deviations of the "
        "good scores, not in brightness: a brightness change hardly moves the shipped "
        "model's scores (drift-rendered); the image tests see it (drift-images)."
    )
    body = f"{false_table}\n\n{shift_table}\n\n{text}"
    print(body)
    payload = {
        "distribution": args.distribution, "calibration": args.calibration, "window": w,
        "false_alert_rate": config.false_alert_rate, "profiles": args.profiles,
        "unshifted_images": images, "false_alerts": false_any, "false_ks": false_ks,
        "false_binomial": false_binomial, "false_per_10k": rate * 1e4,
        "false_per_10k_upper95": upper * 1e4, "worst_set_per_10k": float(rates.max()) * 1e4,
        "monitor_agrees": bool(agreed), "shifts": shift_json,
    }  # fmt: skip
    print_json_line("drift", payload)
    if args.write_docs:
        update_docs_section(args.section or "drift", body)
    return payload


def run_rendered(args: argparse.Namespace) -> dict:
    """Streams resampled from rendered views' real scores (``benchmarks/drift_scores.py``):
    calibration on a random half of the views, the stream from the other half, as
    rendered and then with the brightness change, against a control that stays as
    rendered."""
    config = DriftConfig(window=args.window, false_alert_rate=args.rate)
    data = json.loads(args.scores.read_text())
    good, shifted = np.asarray(data["good"]), np.asarray(data["shifted"])
    rng = np.random.default_rng(args.seed)
    n = good.size
    size = min(args.calibration, n // 2)
    change = f"{data['brightness']:+.0%} brightness"
    kinds = {f"as rendered, then {change}": shifted, "as rendered throughout (control)": good}
    delays: dict[str, list[float]] = {label: [] for label in kinds}
    for _ in range(args.shifted_streams):
        order = rng.permutation(n)
        calibration, rest = good[order[:size]], order[size:]
        threshold = false_alarm_threshold(calibration, args.target_fpr).value
        tests = shared(WindowTests(config, calibration.tolist(), args.target_fpr, threshold),
                       config, args.tests)  # fmt: skip
        lead = int(rng.integers(config.window, 2 * config.window))
        before = good[rng.choice(rest, lead)]
        for label, pool in kinds.items():
            after = pool[rng.choice(rest, args.max_images)]
            delays[label].append(images_to_alert(tests, threshold, before, after))
    rows, found = delay_rows(delays, args)
    sd = float(good.std(ddof=1))
    moved = float((shifted - good).mean()) / sd
    distance = float(ks_statistics(good, shifted[None, :])[0])
    table = markdown_table(
        ["stream (resampled views)", "streams", f"alert within {args.within} images",
         "median images to alert", "95th percentile", f"no alert in {args.max_images}"],
        rows,
    )  # fmt: skip
    text = (
        f"{n} distinct good views of {data['class']} (render {Path(data['render']).name}, "
        f"{data['references']} other views as references, model sha256 "
        f"{data['model_sha256'][:12]}...), each scored as rendered and with {change} "
        f"({data['cpu_s']:.0f} CPU s for both). The change moved the scores by "
        f"{moved:+.3g} standard deviations of the good scores on average (paired), and the "
        f"two score sets are {distance:.3f} apart in Kolmogorov-Smirnov distance. Each "
        f"stream calibrates on {size} views drawn at random and resamples the other "
        f"{n - size} with replacement, so even the control repeats a few views against a "
        "calibration set of others: read the brightness row against the control row. "
        f"Windows of {config.window}, each test at {config.level(args.tests):g} "
        f"({share_words(args.tests)})."
    )
    body = f"{table}\n\n{text}"
    print(body)
    payload = {"scores": str(args.scores), "views": n, "calibration": size,
               "moved_sd": moved, "ks_distance": distance, "window": config.window,
               "streams": found}  # fmt: skip
    print_json_line("drift-rendered", payload)
    if args.write_docs:
        update_docs_section(args.section or "drift-rendered", body)
    return payload


def image_windows(
    tests: WindowTests, threshold: float, scores: np.ndarray, images: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Per window (rows of ``scores``, ``(B, m)``; ``images``, ``(B, m, len(NAMES))``):
    did an image test fire, did a score test fire (the tests ``judge`` runs, batched)."""
    ks, binomial = window_alerts(tests, threshold, scores)
    image = (tests.image_p_values(images)[1] < tests.level).any(axis=1)
    return image, ks | binomial


def first_alert_after(fired: np.ndarray, window: int, start: int) -> float:
    """Images from image ``start`` to the end of the first window that fired and ends at
    or after it (windows of ``window`` from image 0); inf when none."""
    ends = np.flatnonzero(fired) * window + window - 1
    later = ends[ends >= start]
    return float(later[0] - start + 1) if later.size else math.inf


def run_images(args: argparse.Namespace) -> dict:
    """Streams of rendered views' image statistics (``drift_scores.py --statistics-only``),
    one class per camera: calibration on ``--calibration`` views drawn at random, the
    stream from the other views, each used once, in random order."""
    config = DriftConfig(window=args.window, false_alert_rate=args.rate)
    data = json.loads(args.statistics.read_text())
    if data["names"] != list(NAMES):
        raise SystemExit(f"error: {args.statistics} holds {data['names']}, not the statistics "
                         f"this version computes ({list(NAMES)}); measure it again.")  # fmt: skip
    rng = np.random.default_rng(args.seed)
    w = config.window
    # synthetic calibration score sets for the score tests, cycled through: the image
    # tests' level is what the window has left beside them, and their false alerts count
    score_sets = []
    for _ in range(args.profiles):
        good = draw(rng, args.distribution, args.calibration)
        score_sets.append((good, false_alarm_threshold(good, args.target_fpr).value))
    moved_rows, false_rows, delay_table, found, agreed = [], [], [], {}, True
    total_images = total_false = 0
    for name, entry in data["classes"].items():
        rendered = np.asarray(entry["statistics"]["as rendered"], dtype=np.float64)
        n = len(rendered)
        size = min(args.calibration, n - args.stream_views)
        if size < 2 * len(NAMES) or n - size < args.stream_views:
            raise SystemExit(f"error: class {name} has {n} views: too few for a calibration "
                             f"set beside {args.stream_views} stream views.")  # fmt: skip
        length = (n - size) // w * w  # distinct views in full windows
        changes = {k: np.asarray(v, dtype=np.float64)
                   for k, v in entry["statistics"].items() if k != "as rendered"}  # fmt: skip
        for label, changed in changes.items():
            ratio = np.median(changed / np.maximum(rendered, 1.0), axis=0) - 1.0
            distance = [float(ks_statistics(rendered[:, i], changed[None, :, i])[0])
                        for i in range(len(NAMES))]  # fmt: skip
            cells = [f"{r:+.1%} (D {d:.2f})" for r, d in zip(ratio, distance, strict=True)]
            moved_rows.append([name, f"{label} brightness", *cells])

        image_false = score_false = any_false = windows = 0
        for split in range(args.splits):
            order = rng.permutation(n)
            tests, threshold = image_tests(config, score_sets[split % args.profiles],
                                           rendered[order[:size]], args.target_fpr)  # fmt: skip
            scores = draw(rng, args.distribution, length).reshape(-1, w)
            stats = rendered[order[size : size + length]].reshape(-1, w, len(NAMES))
            image, score = image_windows(tests, threshold, scores, stats)
            image_false += int(image.sum())
            score_false += int(score.sum())
            any_false += int((image | score).sum())
            windows += image.size
        images = windows * w
        total_images += images
        total_false += any_false
        false_rows.append([name, n, size, length, f"{windows:,}",
                           f"{any_false} ({image_false} / {score_false})",
                           any_false / images * 1e4, poisson_upper(any_false, images) * 1e4,
                           config.false_alert_rate * 1e4])  # fmt: skip
        kinds = {f"as rendered, then {label} brightness": changed
                 for label, changed in changes.items()}  # fmt: skip
        kinds["as rendered throughout (control)"] = rendered
        delays: dict[str, list[float]] = {}
        for label, pool in kinds.items():
            delays[label] = []
            for stream in range(args.shifted_streams):
                order = rng.permutation(n)
                tests, threshold = image_tests(config, score_sets[stream % args.profiles],
                                               rendered[order[:size]], args.target_fpr)  # fmt: skip
                lead = int(rng.integers(0, w))  # the change starts anywhere in the first window
                views = order[size : size + length]
                stats = np.concatenate([rendered[views[:lead]], pool[views[lead:]]])
                scores = draw(rng, args.distribution, length)
                image, score = image_windows(tests, threshold, scores.reshape(-1, w),
                                             stats.reshape(-1, w, len(NAMES)))  # fmt: skip
                delays[label].append(first_alert_after(image | score, w, lead))
                if stream < args.monitor_streams:  # the daemon's monitor, image by image
                    expected = [int(i) * w + w - 1 for i in np.flatnonzero(image | score)]
                    agreed &= monitor_image_alerts(config, tests, threshold, args.target_fpr,
                                                   scores, stats,
                                                   rendered[order[:size]]) == expected  # fmt: skip
        rows, shown = delay_rows(delays, args, "no alert")
        delay_table += [[name, *row] for row in rows]
        found[name] = {"views": n, "calibration": size, "stream_views": length,
                       "windows": windows, "false_alerts": any_false,
                       "false_image": image_false, "false_score": score_false,
                       "false_per_10k": any_false / images * 1e4,
                       "false_per_10k_upper95": poisson_upper(any_false, images) * 1e4,
                       "streams": shown}  # fmt: skip
    labels = [BY_NAME[n].label for n in NAMES]
    moved = markdown_table(
        ["class", "change", *[f"{label}: median change (KS distance)" for label in labels]],
        moved_rows,
    )  # fmt: skip
    false_table = markdown_table(
        ["class", "views", "calibration views", "stream views (distinct)", "windows",
         "false drift alerts (image / score tests)", "per 10,000 images", "95% upper bound",
         "stated level"],
        false_rows,
    )  # fmt: skip
    shift_table = markdown_table(
        ["class", "stream (distinct views)", "streams", f"alert within {args.within} images",
         "median images to alert", "95th percentile", "no alert in the stream"],
        delay_table,
    )  # fmt: skip
    names = ", ".join(data["classes"])
    text = (
        f"Good views of {names} (render {Path(data['render']).name}), each class one "
        f"camera; the image statistics of {data['images']} images (every view as rendered "
        f"and after each change, every pixel times 1 + change, clipped) took "
        f"{data['cpu_s']:.1f} CPU s with decoding; alone, {data['statistics_ms']:.2f} CPU ms "
        f"per {data['view_size']} view and {data['frame_ms']:.2f} ms per 5-megapixel "
        "frame (2448 x 2048). First table: how far each change moves "
        "each statistic (median over the views of the paired change; Kolmogorov-Smirnov "
        "distance between all views as rendered and all changed). Each stream calibrates "
        "on views drawn at random and streams the others once each in random order, so "
        "every window holds distinct views none of which is in the calibration set; an "
        "unshifted stream's windows are as exchangeable with the calibration views as a "
        "steady line's. The window also runs the two score tests on synthetic "
        f"{args.distribution} scores (a calibration set of {args.calibration} drawn for "
        f"each of {args.profiles} profiles, cycled; not the model's, which a brightness "
        "change hardly moves: see drift-rendered), so each of "
        f"the five tests runs at {config.level(5):g} (false_alert_rate "
        f"{config.false_alert_rate:g} x window {w} / 5) and the false alerts count all "
        f"five: {total_false} in {total_images:,} unshifted images. Splits of one pool of "
        "views share views, so the upper bound, which takes the windows as independent, "
        "is a little optimistic. A change starts at a random image of the first window. "
        "The batched tests alerted at the same images as the daemon's DriftMonitor fed "
        f"one image at a time ({args.monitor_streams} streams per class and stream kind): "
        f"{'yes' if agreed else 'NO'}."
    )
    body = f"{moved}\n\n{false_table}\n\n{shift_table}\n\n{text}"
    print(body)
    payload = {"statistics": str(args.statistics), "window": w, "level": config.level(5),
               "false_alert_rate": config.false_alert_rate, "classes": found,
               "unshifted_images": total_images, "false_alerts": total_false,
               "monitor_agrees": bool(agreed)}  # fmt: skip
    print_json_line("drift-images", payload)
    if args.write_docs:
        update_docs_section(args.section or "drift-images", body)
    return payload


def image_tests(
    config: DriftConfig, score_set: tuple[np.ndarray, float], calibration: np.ndarray,
    target: float,
) -> tuple[WindowTests, float]:  # fmt: skip
    """The daemon's tests for a profile calibrated on ``calibration`` (image statistics,
    one row per view) with the synthetic good scores and threshold of ``score_set``."""
    good, threshold = score_set
    table = statistics_table(calibration.tolist())
    return WindowTests(config, good.tolist(), target, threshold, table), threshold


def monitor_image_alerts(
    config: DriftConfig, tests: WindowTests, threshold: float, target: float,
    scores: np.ndarray, stats: np.ndarray, calibration: np.ndarray,
) -> list[int]:  # fmt: skip
    """The images at which the daemon's own monitor, fed one result with its image
    statistics at a time, alerts."""
    monitor = DriftMonitor(config)
    good = tests.reference.tolist() if tests.reference is not None else None
    table = statistics_table(calibration.tolist())
    return [
        i for i, (score, row) in enumerate(zip(scores.tolist(), stats.tolist(), strict=True))
        if monitor.observe("cam", "bench", score, score > threshold, good, target, threshold,
                           statistics=row, good_image_stats=table)
    ]  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--distribution", choices=["gamma", "normal", "lognormal"],
                        default="gamma")  # fmt: skip
    parser.add_argument("--calibration", type=int, default=300, help="Good scores per set.")
    parser.add_argument("--target-fpr", type=float, default=0.01)
    parser.add_argument("--window", type=int, default=DriftConfig().window)
    parser.add_argument("--rate", type=float, default=DriftConfig().false_alert_rate,
                        help="The stated false drift alert rate per image.")  # fmt: skip
    parser.add_argument("--profiles", type=int, default=200, help="Calibration sets.")
    parser.add_argument("--unshifted-images", type=int, default=50_000,
                        help="Unshifted images per calibration set.")  # fmt: skip
    parser.add_argument("--shift", type=float, action="append", default=None,
                        help="Shift in good-score standard deviations (repeat).")  # fmt: skip
    parser.add_argument("--shifted-streams", type=int, default=1000,
                        help="Shifted streams per shift, spread over the sets.")  # fmt: skip
    parser.add_argument("--within", type=int, default=200)
    parser.add_argument("--max-images", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--scores", type=Path, default=None,
                        help="Real scores from benchmarks/drift_scores.py instead of a "
                        "distribution.")  # fmt: skip
    parser.add_argument("--statistics", type=Path, default=None,
                        help="Image statistics from benchmarks/drift_scores.py "
                        "--statistics-only: the image tests on rendered views.")  # fmt: skip
    parser.add_argument("--splits", type=int, default=20_000,
                        help="Unshifted streams per class (--statistics).")  # fmt: skip
    parser.add_argument("--stream-views", type=int, default=300,
                        help="Distinct views a stream needs (--statistics).")  # fmt: skip
    parser.add_argument("--monitor-streams", type=int, default=20,
                        help="Streams per kind also fed through the daemon's monitor.")  # fmt: skip
    parser.add_argument("--tests", type=int, default=5,
                        help="Tests sharing a window's level (5: a profile calibrated with "
                        "image statistics, 2: one without).")  # fmt: skip
    parser.add_argument("--section", default=None,
                        help="Default: drift (drift-rendered, drift-images).")  # fmt: skip
    parser.add_argument("--write-docs", action="store_true")
    args = parser.parse_args()
    args.shift = args.shift or [0.25, 0.5, 0.75, 1.0]
    if args.statistics is not None:
        run_images(args)
    elif args.scores is not None:
        run_rendered(args)
    else:
        run(args)


if __name__ == "__main__":
    main()
