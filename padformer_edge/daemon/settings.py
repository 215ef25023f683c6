"""The daemon config: its schema, and which file runs with which folder overrides.

The schema lives beside the daemon it configures, like every schema (``config.py`` is only
the loader); it is registered as the ``daemon`` kind of ``config check``.

``padformer-edge watch /camera/out`` must work with nothing else, so the bundled config
describes one camera and one profile, and folders on the command line replace its camera
path. With several folders each becomes a camera named after its folder, sharing the
single camera's profile. A config with several cameras already says where each one
writes, so folders on the command line would be ambiguous and are refused.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, field_validator, model_validator

from padformer_edge.config import StrictModel, load_config, register_config_kind
from padformer_edge.daemon.alerts.config import AlertsConfig
from padformer_edge.devices.runtimes import DeviceName, RuntimeName
from padformer_edge.errors import UserError
from padformer_edge.images.decode import DEFAULT_MAX_PIXELS
from padformer_edge.store.lines import LINE_PATTERN, MAX_LINE_CHARS, default_line
from padformer_edge.store.locations import state_dir
from padformer_edge.web.config import HttpConfig

# Names cameras and copy tools use while a file is still being written.
TEMPORARY_NAMES = (".*", "*.tmp", "*.part", "*.partial", "*~")
# config/daemon.yaml, reached through a link inside the package so that a wheel (not only
# an editable install) carries it.
BUNDLED_CONFIG = Path(__file__).with_name("daemon.yaml")
HeatmapFormat = Literal["jpeg", "png", "png-stored"]
"""``worker.heatmap_format``'s names, those of ``detect.heatmap.OVERLAY_ENCODINGS`` (named
here too, because the config is read without importing OpenCV)."""


class CameraConfig(StrictModel):
    """One camera folder and the profile its images are inspected with."""

    name: str = Field(
        min_length=1,
        max_length=128,
        pattern=r"^[A-Za-z0-9_.-]+$",
        description="The camera's name in the history, the alerts and the page.",
    )
    path: Path = Field(description="The folder the camera writes its images into.")
    profile: str = Field(min_length=1, description="The profile its images are inspected with.")


class IntakeConfig(StrictModel):
    """How files are discovered and when they count as completely written."""

    polling: bool = Field(
        False, description="Poll instead of waiting for events (network shares send none)."
    )
    poll_interval_s: float = Field(2.0, gt=0, description="Seconds between polls.")
    recursive: bool = Field(True, description="Watch subfolders (dated folders) too.")
    stable_ms: int = Field(
        300,
        ge=0,
        description="A file written in place whose size stays the same this long and that "
        "ends with its format's trailer counts as completely written; one renamed into the "
        "folder counts at once, trailer checked.",
    )
    settle_timeout_s: float = Field(
        10.0, gt=0, description="A file still incomplete after this is recorded as truncated."
    )
    rescan_interval_s: float = Field(
        300.0, gt=0, description="Seconds between reconciliation scans for files events missed."
    )
    max_file_mb: float = Field(64.0, gt=0, description="Larger files are refused unread.")
    # Width x height a file's header may declare; larger is refused before decoding, so a
    # small decompression bomb cannot take the memory and minutes of every other image.
    max_megapixels: float = Field(
        DEFAULT_MAX_PIXELS / 1e6,
        gt=0,
        description="Width x height a header may declare; larger is refused undecoded.",
    )
    ignore: list[str] = Field(
        default_factory=lambda: list(TEMPORARY_NAMES),
        description="Name patterns of files still being written, never inspected.",
    )


class WorkerConfig(StrictModel):
    """Batching, overload and retry policy of the one inspection worker.

    ``device`` overrides every profile's own device setting when set (a line PC whose GPU
    is gone can be kept running on the CPU without editing each profile); ``runtime``
    does the same for the runtime (a line moved to a torch-free install, or to OpenVINO,
    with every profile already exported for it). ``allow_tf32`` is here rather than in a
    profile because torch's TF32 switches are process-wide (``detect.tf32``).
    """

    max_batch: int = Field(
        4, ge=1, description="Images per detection call, taken round-robin over cameras."
    )
    max_wait_ms: int = Field(
        200, ge=0, description="How long a part-filled batch waits for more images."
    )
    burst_max_batch: int | None = Field(
        None,
        ge=1,
        description=(
            "While the queue is long, batches may double from max_batch up to this many "
            "images (a GPU drains a burst faster in large batches); unset: never grow."
        ),
    )
    burst_latency_ms: int = Field(
        1000,
        gt=0,
        description=(
            "A grown batch must finish within this many milliseconds: it only doubles "
            "while the last batch took under half of it, and halves when one took longer."
        ),
    )
    deadline_s: float = Field(
        600.0, gt=0, description="Images queued longer are skipped with an operator alert."
    )
    max_attempts: int = Field(3, ge=1, description="A file failing this often is 'failed'.")
    device: DeviceName | None = Field(
        None, description="Overrides every profile's device when set."
    )
    runtime: RuntimeName | None = Field(
        None,
        description=(
            "Overrides every profile's detection.runtime when set (torch, onnxruntime or "
            "openvino); a graph runtime needs each profile exported for it (profile export "
            "NAME --runtime RUNTIME)."
        ),
    )
    allow_tf32: bool = Field(
        False,
        description=(
            "Let torch on a CUDA GPU run float32 convolutions and matrix products in TF32: "
            "faster, but maps then miss the CPU's by more than the parity bound (set it "
            "only where benchmarks/gpu_detect_speed.py --model shipped shows the bound "
            "held). One setting for the whole daemon: torch's switch is process-wide."
        ),
    )

    host_threads: int = Field(
        2,
        ge=1,
        description=(
            "Threads that read and decode camera files and draw and encode heatmaps, the "
            "host side's CPU work per image (OpenCV releases the GIL there, so they use "
            "more than one core); 1 does it in the worker's own threads."
        ),
    )
    heatmap_format: HeatmapFormat = Field(
        "jpeg",
        description=(
            "How heatmap overlays are stored: jpeg (quality 90, full colour resolution: "
            "a fraction of png's encoding CPU, in smaller files), png (lossless, "
            "deflate), png-stored (lossless, uncompressed: the least CPU, the largest "
            "files). The host-side benchmark's table measures each."
        ),
    )

    @model_validator(mode="before")
    @classmethod
    def _heatmap_format_named(cls, data: object) -> object:
        """A config written for the earlier ``compress_heatmaps`` switch is told its new
        name and values rather than only that the key is unknown."""
        if isinstance(data, dict) and "compress_heatmaps" in data:
            raise ValueError(
                "compress_heatmaps is now heatmap_format: write heatmap_format: png for "
                "compressed PNG overlays or png-stored for uncompressed ones (the earlier "
                "true and false), or remove the key for the default jpeg"
            )
        return data

    @model_validator(mode="after")
    def _burst_above_batch(self) -> WorkerConfig:
        if self.burst_max_batch is not None and self.burst_max_batch < self.max_batch:
            raise ValueError(
                f"worker.burst_max_batch ({self.burst_max_batch}) is below worker.max_batch "
                f"({self.max_batch}); set it to at least {self.max_batch} or leave it out."
            )
        return self


class DriftConfig(StrictModel):
    """Drift watch: per camera, each window of recent scores and images against the
    profile's calibration (``daemon.drift``).

    Windows do not overlap. Each runs up to five tests (Kolmogorov-Smirnov on the scores,
    binomial on the flagged count, Kolmogorov-Smirnov on each of the three image
    statistics), as many as the profile's calibration kept the reference for; the
    window's share ``false_alert_rate * window`` is split evenly among them (Bonferroni),
    so on an unchanged line false drift alerts stay at or below ``false_alert_rate`` per
    image whatever the distributions and however the tests depend on each other.
    """

    enabled: bool = Field(True, description="Watch every camera's scores for drift.")
    window: int = Field(
        100, ge=10, le=100_000, description="Images per test; a drift is seen within two."
    )
    false_alert_rate: float = Field(
        1e-4,
        gt=0.0,
        le=0.01,
        description="Highest rate of false drift alerts per image on an unchanged line.",
    )

    @model_validator(mode="after")
    def _level_below_one(self) -> DriftConfig:
        if self.false_alert_rate * self.window > 0.5:
            raise ValueError(
                "false_alert_rate x window must be at most 0.5 (each window's tests share "
                "that chance of a false alert); lower one of them"
            )
        return self

    @property
    def per_window(self) -> float:
        """The chance of a false drift alert one window may have, all its tests together."""
        return self.false_alert_rate * self.window

    def level(self, tests: int) -> float:
        """The significance level of each of ``tests`` tests run on one window."""
        return self.per_window / tests


def database_in_state(value: str | None) -> str | None:
    """A relative database file lies in the state folder, like every relative path of
    this config: taken from the working directory instead, a moved state folder (or a
    daemon started from another folder) would open another, empty history."""
    if value is None or "://" in value or Path(value).expanduser().is_absolute():
        return value
    return str(state_dir() / value)


class PublishedProfilesConfig(StrictModel):
    """Profiles published from the workstation (``profile publish`` and ``profile
    assign``): the daemon polls the versions assigned to its line, pulls each new one
    into its profiles folder, checks every file's sha256 and takes it up without a
    restart (``daemon.assignments``)."""

    enabled: bool = Field(True, description="Poll this line's assigned profile versions.")
    database: str | None = Field(
        None,
        description="Where the published profiles and assignments are: a path or URL "
        "(the plant's PostgreSQL); default: plant_database when set, else the daemon's own "
        "database.",
    )
    poll_interval_s: float = Field(
        5.0,
        ge=0.5,
        le=3600,
        description="Seconds between looks at this line's assignments; a new version is "
        "pulled, verified and scoring within this plus the time its detector takes to build.",
    )

    _database_in_state = field_validator("database")(database_in_state)


@register_config_kind("daemon")
class DaemonConfig(StrictModel):
    """``padformer-edge watch --config FILE``: cameras, their profiles and the policies.

    Relative paths are taken under the state directory, so the bundled config works
    wherever the service keeps its data; ``profiles_dir`` defaults to the profiles root.
    """

    line: str | None = Field(
        None,
        min_length=1,
        max_length=MAX_LINE_CHARS,
        pattern=LINE_PATTERN,
        description="This line's name on every row it stores, on the page and on /metrics; "
        "one daemon per line. Default: the host name.",
    )
    database: str | None = Field(
        None,
        description="History database: a path or URL; default results.sqlite3, or "
        "$PADFORMER_EDGE_DB.",
    )
    plant_database: str | None = Field(
        None,
        description="The plant's PostgreSQL URL (postgresql://USER@HOST/DB): results, "
        "reviews, alerts, drift events and reference candidates are forwarded there exactly "
        "once from the line's own SQLite database, which keeps the queue; unset: the SQLite "
        "database alone.",
    )
    heatmaps: Path | None = Field(
        None, description="Heatmap folder (default heatmaps); never inside a camera folder."
    )
    profiles_dir: Path | None = Field(
        None, description="Profiles root; default $PADFORMER_EDGE_PROFILES, else profiles."
    )
    cameras: list[CameraConfig] = Field(
        min_length=1, description="The camera folders and their profiles."
    )
    intake: IntakeConfig = Field(IntakeConfig(), description="How new files are found.")
    worker: WorkerConfig = Field(WorkerConfig(), description="How files are inspected.")
    alerts: AlertsConfig = Field(
        default_factory=AlertsConfig, description="Where alerts go; see Alerts."
    )
    drift: DriftConfig = Field(
        default_factory=DriftConfig, description="Drift watch on each camera's scores."
    )
    watchdog_stall_s: float = Field(
        120.0, gt=0, description="A batch running longer than this counts as a hang."
    )
    profile_check_interval_s: float = Field(
        2.0,
        ge=0.1,
        le=3600,
        description="Seconds between checks of each served profile.yaml; a new version "
        "is taken up without a restart.",
    )
    http: HttpConfig | None = Field(
        None, description="The operator's page, served by watch when set."
    )
    published_profiles: PublishedProfilesConfig = Field(
        default_factory=PublishedProfilesConfig,
        description="Profile versions published from the workstation and assigned to this line.",
    )
    claim_expiry_s: float = Field(
        30.0,
        ge=3.0,
        le=3600,
        description="A daemon renews its claim on its line and camera folders (in the "
        "plant database too, with plant_database) every third of this; one silent this long "
        "(its PC died) no longer holds them.",
    )

    @property
    def line_name(self) -> str:
        """The configured line, else this PC's default (the host name)."""
        return self.line or default_line()

    _database_in_state = field_validator("database")(database_in_state)

    @field_validator("plant_database")
    @classmethod
    def _plant_is_postgresql(cls, value: str | None) -> str | None:
        """Only a server can be the plant's database: several line PCs write it."""
        if value is not None and not value.startswith(("postgresql://", "postgresql+")):
            raise ValueError(
                "plant_database must be a PostgreSQL URL such as "
                "postgresql://padformer@plant-db/padformer; a SQLite file is one PC's database"
            )
        return value

    @model_validator(mode="after")
    def _plant_beside_local_sqlite(self) -> DaemonConfig:
        server = self.database is not None and self.database.startswith("postgresql")
        if self.plant_database is not None and server:
            raise ValueError(
                "plant_database forwards from the line's own SQLite database, but database "
                "is a server already; set database to a SQLite file (or leave it out) or "
                "remove plant_database"
            )
        return self

    @model_validator(mode="after")
    def _camera_names_are_unique(self) -> DaemonConfig:
        names = [c.name for c in self.cameras]
        if len(set(names)) != len(names):
            raise ValueError("camera names must be unique")
        return self


def file_roots(config: DaemonConfig) -> list[Path]:
    """The folders whose files the operator's page may show: every camera folder and the
    heatmap folder, relative paths taken under the state directory as the daemon does."""
    base = state_dir()
    folders = [cam.path for cam in config.cameras] + [config.heatmaps or Path("heatmaps")]
    return [(base / folder).expanduser() for folder in folders]


def load_daemon_config(path: str | Path | None, folders: list[Path]) -> DaemonConfig:
    """The validated config of ``path`` (bundled default if None) with ``folders`` applied."""
    source = Path(path) if path is not None else BUNDLED_CONFIG
    config = load_config(source, DaemonConfig)
    if not folders:
        return config
    if len(config.cameras) != 1:
        raise UserError(
            f"{source} defines {len(config.cameras)} cameras; give their folders in "
            "the config instead of on the command line."
        )
    only = config.cameras[0]
    folders = [folder.expanduser().absolute() for folder in folders]
    if len(folders) == 1:
        cameras = [CameraConfig(name=only.name, path=folders[0], profile=only.profile)]
    else:
        names = [folder.name or "root" for folder in folders]
        if len(set(names)) != len(names):
            raise UserError(
                "the camera folders given share a name; use --config to name each "
                "camera explicitly."
            )
        cameras = [
            CameraConfig(name=name, path=folder, profile=only.profile)
            for name, folder in zip(names, folders, strict=True)
        ]
    return config.model_copy(update={"cameras": cameras})
