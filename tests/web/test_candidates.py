"""The candidates gallery on a real server on 127.0.0.1 over the real store: an operator's
false-alarm review offers the part as a reference candidate, the gallery shows its
picture (the copy in the state folder, served after the camera file is gone), an
operator can see but not decide, and an engineer approves it under their own name."""

from __future__ import annotations

import hashlib
from urllib.parse import urlencode

import pytest

from padformer_edge.store.candidates import get_candidate
from padformer_edge.store.engine import open_engine
from padformer_edge.store.models import ReviewVerdict
from padformer_edge.store.queue import DetectionOutcome, claim_batch, complete, enqueue
from padformer_edge.store.reviews import save_review
from padformer_edge.store.users import add_user
from padformer_edge.store.vocabulary import CandidateState, Role
from padformer_edge.web.server import WebServer
from tests.web.client import Reply, request
from tests.web.site import Site, png


@pytest.fixture
def candidate(site: Site, server: WebServer) -> int:
    """A part inspected on the line and reviewed as good by an operator: a candidate."""
    engine = open_engine(site.db)
    picture = png(site.cameras / "cam-a" / "good-part.png", seed=41)
    data = picture.read_bytes()
    row = enqueue(engine, camera="cam-a", product="bolt", source_path=str(picture),
                  sha256=hashlib.sha256(data).hexdigest(), size_bytes=len(data))  # fmt: skip
    claim_batch(engine, 100)  # the site's own pending rows come first
    complete(engine, row.id, DetectionOutcome(score=1.7, threshold=1.5, heatmap_path=None,
                                              model_sha256="0" * 64, detect_ms=1.0))  # fmt: skip
    made = save_review(engine, row.id, ReviewVerdict.false_alarm, reviewer="ann").candidate
    engine.dispose()
    picture.unlink()  # the camera folder is cleaned; the gallery shows the kept copy
    assert made is not None
    return made


@pytest.fixture
def people(site: Site) -> dict[str, str]:
    engine = open_engine(site.db)
    tokens = {"ann": add_user(engine, "ann", Role.operator)[1],
              "bob": add_user(engine, "bob", Role.engineer)[1]}  # fmt: skip
    engine.dispose()
    return tokens


def _session(server: WebServer, name: str, token: str) -> dict[str, str]:
    body = urlencode({"name": name, "token": token, "next": "/candidates"}).encode()
    reply = request(server.url, "/login", method="POST", headers={"Origin": server.url},
                    body=body)  # fmt: skip
    assert reply.status == 303, reply.text
    return {"Cookie": reply.headers["set-cookie"].split(";")[0]}


def _decide(server: WebServer, candidate: int, headers: dict[str, str], decision: str) -> Reply:
    return request(server.url, f"/candidates/{candidate}/decision", method="POST",
                   headers={"Origin": server.url, **headers},
                   body=urlencode({"decision": decision}).encode())  # fmt: skip


def test_an_engineer_approves_a_candidate_an_operator_only_sees(
    server: WebServer, site: Site, candidate: int, people: dict[str, str]
) -> None:
    ann = _session(server, "ann", people["ann"])
    gallery = request(server.url, "/candidates", headers={**ann, "Accept": "text/html"}).text
    assert f'id="candidate-{candidate}"' in gallery and "reviewed by ann" in gallery
    assert "Only an engineer approves" in gallery and 'value="approve"' not in gallery
    picture = request(server.url, f"/candidates/{candidate}/image", headers=ann)
    assert picture.status == 200 and picture.headers["content-type"] == "image/png"
    engine = open_engine(site.db)
    kept = get_candidate(engine, candidate)
    assert kept is not None and hashlib.sha256(picture.body).hexdigest() == kept.sha256
    refused = _decide(server, candidate, ann, "approve")
    assert refused.status == 403 and "only an engineer" in refused.text
    assert get_candidate(engine, candidate).state is CandidateState.pending  # type: ignore[union-attr]

    bob = _session(server, "bob", people["bob"])
    gallery = request(server.url, "/candidates", headers={**bob, "Accept": "text/html"}).text
    assert 'value="approve"' in gallery and 'name="engineer"' not in gallery
    approved = _decide(server, candidate, bob, "approve")
    assert approved.status == 200, approved.text
    decided = get_candidate(engine, candidate)
    assert decided is not None and (decided.state, decided.decided_by) == (
        CandidateState.approved, "bob")
    listed = request(server.url, "/candidates?state=approved",
                     headers={**bob, "Accept": "text/html"}).text  # fmt: skip
    assert "approved by bob" in listed
    engine.dispose()
