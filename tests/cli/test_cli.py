"""The CLI as a user runs it: a real subprocess, exit codes and one-line errors."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from padformer_edge import __version__
from tests.cli_process import run_cli


def test_version() -> None:
    result = run_cli("--version")
    assert result.returncode == 0
    assert result.stdout.strip() == f"padformer-edge {__version__}"


def test_help_lists_config_group() -> None:
    result = run_cli("--help")
    assert result.returncode == 0
    assert "config" in result.stdout


def test_config_check_bad_file_is_one_clear_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("- not\n- a mapping\n")
    result = run_cli("config", "check", str(path))
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert "top level must be a mapping" in result.stderr


def test_a_command_exit_code_reaches_the_shell(tmp_path: Path) -> None:
    """``typer.Exit(code)`` inside a command must become the process status."""
    script = tmp_path / "exit_probe.py"
    script.write_text(
        "import typer\n"
        "from padformer_edge.cli import app as cli\n"
        "@cli.app.command('exit-probe')\n"
        "def probe() -> None:\n"
        "    raise typer.Exit(3)\n"
        "cli.main()\n"
    )
    result = subprocess.run(
        [sys.executable, str(script), "exit-probe"], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 3


def test_config_check_of_a_daemon_config_points_at_doctor(tmp_path: Path) -> None:
    """The schema is valid though the camera folder and profile do not exist: ``config
    check`` says valid, and says that those are ``doctor``'s to check."""
    path = tmp_path / "daemon.yaml"
    path.write_text(f"cameras:\n  - name: c\n    path: {tmp_path / 'nowhere'}\n    profile: x\n")
    result = run_cli("config", "check", str(path))
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0] == f"{path}: valid daemon config."
    assert f"run `padformer-edge doctor --config {path}`" in result.stdout


def test_shell_completion_completes_commands() -> None:
    """The installed console script answers the shell's completion request, as the
    script ``--install-completion`` writes would ask it."""
    script = Path(sys.executable).with_name("padformer-edge")
    env = {
        **os.environ,
        "_PADFORMER_EDGE_COMPLETE": "complete_bash",
        "COMP_WORDS": "padformer-edge profile de",
        "COMP_CWORD": "2",
    }
    result = subprocess.run([script], capture_output=True, text=True, env=env, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["delete"]
