"""Keeping a GPU run's weights: a float16 copy that reads back as the same run, and a
card per kept file whose sha256 matches the file."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from padformer_edge.errors import UserError
from padformer_edge.files.digest import file_sha256
from padformer_edge.model.checkpoint import load_checkpoint, save_checkpoint
from padformer_edge.model.header import read_header
from padformer_edge.model.padformer import build_model
from padformer_edge_training.release.keep_weights import keep, largest_relative_change

REPO = Path(__file__).resolve().parent.parent
FP16_RELATIVE = 2.0**-11  # round-to-nearest bound of float16's 11 significant bits


def test_the_copy_is_smaller_reads_back_alike_and_reports_its_rounding(tmp_path):
    torch.manual_seed(0)
    model = build_model("tiny").eval()
    source = tmp_path / "gpu" / "run.safetensors"
    source.parent.mkdir()
    save_checkpoint(source, model, {"global_step": 6000, "stage": "cross_view"})
    kept = keep(source, tmp_path / "kept")
    assert kept["step"] == 6000
    assert kept["bytes_after"] < 0.55 * kept["bytes_before"]
    copy, metadata = load_checkpoint(tmp_path / "kept" / "run.safetensors")
    assert metadata == {"global_step": 6000, "stage": "cross_view"}
    assert copy.config == model.config
    # a tensor's largest entry is a normal float16 number, so its rounding is bounded
    assert 0 < kept["largest_relative_change"] <= FP16_RELATIVE
    assert kept["tensor"] in model.state_dict()


def test_the_largest_change_names_its_tensor():
    before = {"a": torch.tensor([1.0, 2.0]), "b": torch.tensor([4.0, 0.0]), "n": torch.tensor(3)}
    after = {"a": torch.tensor([1.0, 2.1]), "b": torch.tensor([4.0, 1.0]), "n": torch.tensor(9)}
    change, name = largest_relative_change(before, after)
    assert name == "b" and change == pytest.approx(0.25)


def test_a_file_already_in_the_folder_is_refused(tmp_path):
    path = tmp_path / "run.safetensors"
    save_checkpoint(path, build_model("tiny"), {})
    with pytest.raises(UserError, match="already in"):
        keep(path, tmp_path)


def _card_table(page: Path, block: str) -> list[dict[str, str]]:
    """The rows of a docs block's markdown table, by column header."""
    text = page.read_text(encoding="utf-8")
    body = text.split(f"<!-- BEGIN {block} -->")[1].split(f"<!-- END {block} -->")[0]
    lines = [line for line in body.splitlines() if line.startswith("|")]
    headers = [cell.strip() for cell in lines[0].strip("|").split("|")]
    return [
        dict(zip(headers, (cell.strip() for cell in line.strip("|").split("|")), strict=True))
        for line in lines[2:]
    ]


def test_every_kept_weights_file_matches_the_sha256_its_card_lists():
    """The weights docs tables were measured on are kept in one folder, each with its card
    (``benchmarks/model_card.py`` writes the table from the files); a file replaced or
    added without its card would silently change what the tables describe."""
    cards = _card_table(REPO / "docs" / "benchmarks.md", "kept-weights-card")
    kept = sorted((REPO / "benchmarks" / "models").glob("*.safetensors"))
    assert [card["file"] for card in cards] == [p.relative_to(REPO).as_posix() for p in kept]
    for card, path in zip(cards, kept, strict=True):
        assert card["sha256"].strip("`") == file_sha256(path), f"{path.name}: not its card's file"
        header = read_header(path)
        assert (card["preset"], card["storage"]) == (header["preset"], header["storage"])


def test_the_card_table_reader_reads_rows_by_header(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(
        "x\n<!-- BEGIN b -->\nMeasured with ...:\n\n| file | sha256 |\n|---|---|\n"
        "| a.safetensors | `00ff` |\n<!-- END b -->\n"
    )
    assert _card_table(page, "b") == [{"file": "a.safetensors", "sha256": "`00ff`"}]
