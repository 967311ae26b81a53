"""The browser board's server (``frontends.server``) and its server-side games (``frontends.session``):
hop-by-hop input answered by the rules engine, reasons for illegal input, records, limits, several
independent games, and searches stopped by a closed page, undo or the time limit."""

from __future__ import annotations

import json
import threading
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from fastapi.testclient import TestClient

from core.errors import IllegalMoveError
from core.records import record_from_json
from core.rules import Ruleset
from core.state import GameState
from frontends.server import create_app, running_server
from frontends.session import GameSession, NewGame, input_options, move_from_input
from knowledge.agents import make_agent

# White a1 b1 a2 c3, Black c4 c6 m14 n14, White to move (both sides flying): c3xc5xc7 is a 2-hop
# chain, and a White stone flying to b2 forms the square a1-b1-a2-b2 and takes one Black stone.
CHAIN_JFEN = "12BB/14/14/14/14/14/14/14/2B11/14/2B11/2W11/W13/WW12 w battle 0 250"
SHORT = {"max_battle_plies": 8, "adjudicate": "stones"}


@pytest.fixture
def client():
    with TestClient(create_app("random", max_games=4)) as c:
        yield c


def new_game(client, **form):
    r = client.post("/api/games", json={"agent": "random", "rules": SHORT, **form})
    assert r.status_code == 201, r.text
    return r.json()


# ------------------------------------------------------------------ input, answered by the rules engine
def test_input_options_hop_by_hop_and_victims():
    state = GameState.from_jfen(CHAIN_JFEN, Ruleset(fly_jump_rule="none"))
    start = input_options(state, ["c3"])
    assert "c5" in start["hops"] and "b2" in start["steps"]
    first = input_options(state, ["c3", "c5"], jump=True)
    assert first == {"complete": True, "hops": ["c7"], "victims": 0, "choices": []}
    second = input_options(state, ["c3", "c5", "c7"], jump=True)
    assert second["complete"] and second["hops"] == []
    square = input_options(state, ["c3", "b2"])
    assert square["complete"] and square["victims"] == 1
    assert square["choices"] == ["c4", "c6", "m14", "n14"]  # ascending point index
    move = move_from_input(["c3", "b2"], False, ["n14"])
    assert str(state.check_move(move)) == "c3-b2/n14"


def test_input_options_reasons():
    state = GameState.from_jfen(CHAIN_JFEN, Ruleset(fly_jump_rule="none"))
    with pytest.raises(IllegalMoveError, match="c4 is an opponent stone"):
        input_options(state, ["c4"])
    with pytest.raises(IllegalMoveError, match="e5 is empty"):
        input_options(state, ["e5"])
    with pytest.raises(IllegalMoveError, match="not a legal jump chain"):
        input_options(state, ["a1", "a3"], jump=True)
    # strong-side-multi does not apply (both sides fly); all-multi forbids stopping after one hop
    multi = GameState.from_jfen(CHAIN_JFEN, Ruleset(fly_jump_rule="all-multi"))
    assert input_options(multi, ["c3", "c5"], jump=True)["complete"] is False


# ------------------------------------------------------------------ the HTTP API
def test_page_and_static_files_are_served_from_memory_only(client):
    r = client.get("/")
    assert r.status_code == 200 and "<svg id=\"board\"" in r.text
    assert r.headers["content-security-policy"].startswith("default-src 'self'")
    assert client.get("/static/board.js").status_code == 200
    for path in ("/static/../session.py", "/static/..%2Fsession.py", "/static/__init__.py", "/static/"):
        assert client.get(path).status_code == 404


def test_game_flow_reasons_record_and_replay(client):
    view = new_game(client, human="w")
    gid = view["id"]
    assert view["turn"] == "human" and view["phase"] == "layout" and view["rules"]["max_battle_plies"] == 8
    r = client.post(f"/api/games/{gid}/move", json={"path": ["a1"]})
    assert r.status_code == 400
    assert r.json()["error"] == "placement a1: the first two placements go on the centre points g7 and h8"
    assert client.post(f"/api/games/{gid}/agent").status_code == 409  # not the agent's turn
    assert client.post(f"/api/games/{gid}/move", json={"move": "g7"}).json()["turn"] == "agent"
    assert client.post(f"/api/games/{gid}/move", json={"move": "h8"}).status_code == 409
    view = client.post(f"/api/games/{gid}/agent").json()
    assert view["moves"] == ["g7", "h8"] and view["turn"] == "human"
    r = client.post(f"/api/games/{gid}/move", json={"path": ["g7"]})
    assert r.status_code == 400 and r.json()["error"] == "placement g7: g7 is occupied"
    # play the game out through the API (first legal move) and check the record replays
    while view["turn"] != "over":
        if view["turn"] == "human":
            state = GameState.from_jfen(view["jfen"], Ruleset(**SHORT))
            view = client.post(f"/api/games/{gid}/move", json={"move": str(state.legal_moves()[0])}).json()
        else:
            view = client.post(f"/api/games/{gid}/agent").json()
    rec = record_from_json(client.get(f"/api/games/{gid}/record.json").text)
    states = rec.replay()
    assert list(rec.moves) == view["moves"] and states[-1].is_terminal()
    assert rec.result == view["result"] and rec.white == "human" and rec.black == "random"
    jiu = client.get(f"/api/games/{gid}/record.jiu")
    assert jiu.status_code == 200 and jiu.text.startswith("[JIU14][human z][random Z]")
    assert "attachment" in jiu.headers["content-disposition"]


def test_undo_and_resign(client):
    view = new_game(client, human="b")
    gid = view["id"]
    view = client.post(f"/api/games/{gid}/agent").json()
    assert client.post(f"/api/games/{gid}/undo").status_code == 409  # the person has not moved
    view = client.post(f"/api/games/{gid}/move", json={"move": "h8" if view["moves"] == ["g7"] else "g7"}).json()
    view = client.post(f"/api/games/{gid}/agent").json()
    assert len(view["moves"]) == 3
    view = client.post(f"/api/games/{gid}/undo").json()
    assert len(view["moves"]) == 1 and view["turn"] == "human"
    view = client.post(f"/api/games/{gid}/resign").json()
    assert view["over"] and view["result"] == "w" and view["reason"] == "resign"
    rec = record_from_json(client.get(f"/api/games/{gid}/record.json").text)
    assert rec.result == "w" and rec.reason == "resign"


@pytest.mark.parametrize("body, status, message", [
    ({"agent": "nosuch"}, 400, "unknown agent 'nosuch'"),
    ({"agent": "random", "rules": {"loss_below": 0}}, 400, "loss_below"),
    ({"agent": "random", "rules": {"no_such_rule": 1}}, 400, "no_such_rule"),
    ({"agent": "random", "human": "x"}, 422, "human"),
    ({"agent": "random", "seconds": 1e9}, 422, "seconds"),
    ({"agent": "random", "extra": 1}, 422, "extra"),
])
def test_new_game_validation(client, body, status, message):
    r = client.post("/api/games", json=body)
    assert r.status_code == status and message in r.json()["error"]


def test_limits_and_unknown_ids(client):
    r = client.post("/api/games", content=b"{" + b" " * (1 << 20) + b"}", headers={"content-type": "application/json"})
    assert r.status_code == 413 and "over" in r.json()["error"]
    assert client.get("/api/games/doesnotexist").status_code == 404
    assert client.get("/api/games/bad.id").status_code == 422
    games = [new_game(client)["id"] for _ in range(5)]  # max_games=4: the oldest goes
    assert client.get(f"/api/games/{games[0]}").status_code == 404
    assert all(client.get(f"/api/games/{g}").status_code == 200 for g in games[1:])


def test_review_upload_and_move_evaluation(client, tmp_path):
    agent = make_agent("random", seed=2)
    state, moves = GameState.initial(Ruleset(**SHORT)), []
    while not state.is_terminal():
        moves.append(str(agent.select(state)))
        state = state.apply(moves[-1])
    from core.records import GameRecord, record_to_jiu, record_to_json

    rec = GameRecord.from_moves(moves, Ruleset(**SHORT), white="a", black="b")
    r = client.post("/api/reviews", json={"text": record_to_json(rec), "agent": "mcts", "sims": 4})
    assert r.status_code == 201, r.text
    rid = r.json()["id"]
    assert r.json()["at"] == 0 and r.json()["moves"] == moves
    pos = client.get(f"/api/reviews/{rid}/{len(moves)}").json()
    assert pos["jfen"] == state.to_jfen()
    row = client.post(f"/api/reviews/{rid}/{len(moves)}/eval").json()
    assert row["move"] == moves[-1] and row["ply"] == len(moves) and row["loss"] >= 0
    assert client.get(f"/api/reviews/{rid}/{len(moves) + 1}").status_code == 409
    # the competition format is accepted too (its ruleset is the default one)
    r = client.post("/api/reviews", json={"text": record_to_jiu(GameRecord.from_moves(moves[:20])), "agent": "mcts"})
    assert r.status_code == 201 and len(r.json()["moves"]) == 20
    bad = moves[:5] + [moves[0]]  # an occupied point
    text = json.dumps({**json.loads(record_to_json(rec)), "moves": bad})
    r = client.post("/api/reviews", json={"text": text})
    assert r.status_code == 400 and f"move 6 '{moves[0]}'" in r.json()["error"], r.text
    r = client.post("/api/reviews", json={"text": "not a record", "format": "json"})
    assert r.status_code == 400
    r = client.post("/api/reviews", json={"text": record_to_json(rec), "agent": "random"})
    assert r.status_code == 409 and "does not search" in r.json()["error"]


# ------------------------------------------------------------------ searches: workers, limits, cancel
def test_agent_search_shows_top_candidates(client):
    view = new_game(client, agent="mcts:sims=16", human="w")
    gid = view["id"]
    for move in ("g7", "a1"):
        client.post(f"/api/games/{gid}/move", json={"move": move})
        view = client.post(f"/api/games/{gid}/agent").json()
    s = view["search"]
    assert len(s["candidates"]) == 3 and s["simulations"] >= 1 and 0 <= s["white_win"] <= 1
    c = s["candidates"][0]
    assert set(c) >= {"move", "visits", "q", "prior", "path"} and c["move"] == view["moves"][-1]
    assert [e["ply"] for e in view["evals"]] == [2, 4]


def _session(spec: str, **form) -> GameSession:
    agent = make_agent(spec)
    s = GameSession("t", NewGame(agent=spec, human="b", **form), Ruleset(), agent)
    return s


def test_stop_event_ends_a_long_search():
    session = _session("mcts:sims=1000000")
    stop, generation = session.begin_agent_move()
    threading.Timer(0.3, stop.set).start()
    t0 = time.monotonic()
    view = session.agent_move(stop, generation)
    assert time.monotonic() - t0 < 10 and session.cancelled == 1
    assert view["moves"] and view["search"]["simulations"] < 1000000 and not view["thinking"]


def test_time_limit_and_undo_drop_the_move():
    session = _session("mcts:sims=1000000", seconds=0.2)
    stop, generation = session.begin_agent_move()
    t0 = time.monotonic()
    view = session.agent_move(stop, generation)
    assert time.monotonic() - t0 < 10 and len(view["moves"]) == 1  # stopped by the form's 0.2 s
    session.play_human(session.state.legal_moves()[0])
    stop, generation = session.begin_agent_move()
    worker = threading.Thread(target=session.agent_move, args=(stop, generation))
    worker.start()
    time.sleep(0.1)
    session.undo()  # stops the search; its move is dropped
    worker.join(10)
    assert not worker.is_alive() and session.view()["moves"] == view["moves"][:1]
    assert len(session.view()["moves"]) == 1 and session.state.side == session.human


def test_closed_page_cancels_its_search_and_other_games_go_on():
    import httpx

    app = create_app("random")
    with running_server(app) as url:
        with httpx.Client(base_url=url, timeout=10) as http:
            slow = http.post("/api/games", json={"agent": "mcts:sims=1000000", "human": "b"}).json()
            fast = http.post("/api/games", json={"agent": "random", "human": "b"}).json()
            try:  # the page goes away while the agent thinks
                http.post(f"/api/games/{slow['id']}/agent", timeout=0.5)
            except httpx.TimeoutException:
                pass
            # another game is served meanwhile, and its agent moves at once
            t0 = time.monotonic()
            assert http.post(f"/api/games/{fast['id']}/agent").json()["moves"]
            assert time.monotonic() - t0 < 5
            session = app.state.sessions.game(slow["id"])
            deadline = time.monotonic() + 10
            while session.thinking and time.monotonic() < deadline:
                time.sleep(0.05)
            assert not session.thinking and session.cancelled == 1
            view = http.get(f"/api/games/{slow['id']}").json()
            assert view["search"]["simulations"] < 1000000


def test_a_failing_agent_is_a_game_error_and_the_game_goes_on():
    from frontends.session import GameError

    class Broken:
        name = "broken"
        last_think_time = 0.0

        def select(self, state):
            raise RuntimeError("out of coffee")

    session = GameSession("t", NewGame(agent="broken", human="b"), Ruleset(), Broken())
    stop, generation = session.begin_agent_move()
    with pytest.raises(GameError, match="the agent failed: RuntimeError: out of coffee"):
        session.agent_move(stop, generation)
    assert not session.thinking and session.view()["moves"] == []
    session.agent = make_agent("random")
    stop, generation = session.begin_agent_move()
    assert session.agent_move(stop, generation)["moves"]


# ------------------------------------------------------------------ hardening (issue 62: causes S, T, U)
def _one_error(r) -> str:
    """The response is exactly one ``{"error": "one line"}`` object; returns the line."""
    body = r.json()
    assert isinstance(body, dict) and list(body) == ["error"], r.text
    assert isinstance(body["error"], str) and "\n" not in body["error"] and body["error"], r.text
    return body["error"]


def _chunks(n: int, size: int = 1 << 20):
    for _ in range(n):
        yield b" " * size


JSON = {"content-type": "application/json"}


@pytest.mark.parametrize("method, path, kwargs, status, message", [
    ("GET", "/no/such/page", {}, 404, "no such page or API route: /no/such/page"),
    ("DELETE", "/api/games", {}, 405, "method DELETE is not allowed on /api/games"),
    ("PUT", "/", {}, 405, "method PUT"),
    ("POST", "/api/games", {"content": b'{"agent": "\xff\xfe"}', "headers": JSON}, 400, "not UTF-8"),
    ("POST", "/api/games", {"content": b"[" * 200_000 + b"]" * 200_000, "headers": JSON}, 400, "nested too deeply"),
    ("POST", "/api/games", {"content": _chunks, "headers": JSON}, 413, "request body over 1048576 bytes"),
    ("POST", "/api/games", {"content": b"{not json", "headers": JSON}, 422, "request body: not valid JSON"),
    ("POST", "/api/games", {"content": b"1" * 10, "headers": {**JSON, "content-length": "x"}}, 400, "Content-Length"),
])
def test_errors_outside_the_handlers_are_one_json_error(client, method, path, kwargs, status, message):
    if kwargs.get("content") is _chunks:  # a 3 MB chunked body: no Content-Length to refuse it by
        kwargs = {**kwargs, "content": _chunks(3)}
    r = client.request(method, path, **kwargs)
    assert r.status_code == status, r.text
    assert message in _one_error(r)


def test_a_client_cannot_name_server_files(client, tmp_path):
    """Any option naming a file, at any depth of the spec, gets the same 403 whether the file exists
    or not (the answer depends on the spec's text only); operator specs may name files."""
    present = tmp_path / "present.safetensors"
    present.write_bytes(b"not a net")
    for template in ("slm:slm={}", "jfa:upper={}", "jfa:lower={}", "hbm:sims=2,upper={}", "expert+slm:slm={}",
                     "jfa:battle=shape:net={}", "shape:battle=hbm:upper={}"):
        answers = set()
        for path in (present, tmp_path / "missing.safetensors", "~/.bashrc", "/etc/passwd", tmp_path):
            spec = template.format(path)
            for url, body in (("/api/games", {"agent": spec}), ("/api/reviews", {"text": "x", "agent": spec})):
                r = client.post(url, json=body)
                if url == "/api/reviews" and r.status_code == 400:  # "x" is not a record: refused first
                    continue
                answers.add((url, r.status_code, _one_error(r).replace(str(path), "PATH")))
        assert len(answers) == 1, answers
        (_, status, message), = answers
        assert status == 403 and "names a file" in message and "serve --agent" in message
    assert client.post("/api/games", json={"agent": "jfa:lower=none,battle=expert,layout=random"}).status_code != 403
    app = create_app("random", agents=[f"slm:slm={present}"])
    app.state.sessions.check_agent(f" slm:slm={present} ")  # offered by the operator: allowed
    with pytest.raises(Exception, match="names a file"):
        app.state.sessions.check_agent(f"slm:slm={present},sims=3")
    with TestClient(app) as c:
        assert c.get("/api/config").json()["agents"][:2] == ["random", f"slm:slm={present}"]


@pytest.mark.parametrize("args, message", [
    (["--host", "no-such-host.invalid"], "error: serve: cannot resolve host 'no-such-host.invalid'"),
    (["--port", "PORT"], "error: serve: cannot listen on 127.0.0.1:PORT"),
])
def test_serve_start_up_failures_are_one_error_line(args, message):
    import socket

    from typer.testing import CliRunner

    from cli import app

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = str(busy.getsockname()[1])
        args = [a.replace("PORT", port) for a in args]
        result = CliRunner().invoke(app, ["serve", "--agent", "random", *args])
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert result.exit_code == 2 and len(lines) == 1, (result.exit_code, result.stdout, result.stderr)
    assert lines[0].startswith(message.replace("PORT", port)) and result.stdout == ""


# JSON values of any shape, and bodies near the API's: known keys with values of any type.
_json = st.recursive(st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.floats(allow_nan=False)
                     | st.text(max_size=20), lambda inner: st.lists(inner, max_size=4)
                     | st.dictionaries(st.text(max_size=8), inner, max_size=4), max_leaves=12)
_KEYS = ["agent", "human", "sims", "seconds", "rules", "seed", "move", "path", "jump", "victims", "text", "format"]
_AGENTS = ["random", "greedy", "expert", "mcts:sims=2", "nosuch", "random:seed=-1", "slm:slm=/etc/passwd",
           "jfa:upper=~/x", "random+", "+", ":", "random:seed=1,seed=2", "expert+greedy", "a" * 200]
_near = st.fixed_dictionaries({}, optional={
    "agent": st.sampled_from(_AGENTS) | st.text(max_size=30),
    "human": st.sampled_from(["w", "b", "x"]) | _json,
    "sims": st.integers(-5, 200_000) | _json, "seconds": st.floats(-1, 100) | _json,
    "rules": st.dictionaries(st.sampled_from(["max_battle_plies", "adjudicate", "loss_below", "x"]),
                             st.integers(-3, 10**6) | st.text(max_size=8), max_size=3) | _json,
    "seed": st.integers(-1, 2**40), "move": st.text(max_size=30) | _json,
    "path": st.lists(st.sampled_from(["a1", "c3", "c5", "n14", "z9", ""]), max_size=5) | _json,
    "jump": _json, "victims": _json, "text": st.text(max_size=40) | _json, "format": st.sampled_from(["json", "jiu", "x"]),
}) | st.dictionaries(st.sampled_from(_KEYS), _json, max_size=4) | _json


@given(body=_near | st.binary(max_size=40) | st.sampled_from([b"[" * 5000, b"\xff\xfe", b"{" * 3 + b"\x00"]),
       route=st.sampled_from(["/api/games", "GAME/move", "GAME/options", "/api/reviews", "GAME/agent"]))
@settings(max_examples=100, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
def test_fuzz_any_json_body_gives_a_success_or_one_4xx_error(fuzz_client, body, route):
    """Any body (JSON near the API's or not, or bytes that are not JSON or not UTF-8) to any POST
    route: a success or a 4xx that is one ``{"error": ...}``, never a 5xx."""
    client, gid = fuzz_client
    url = route.replace("GAME", f"/api/games/{gid}")
    r = client.post(url, content=body, headers=JSON) if isinstance(body, bytes) else client.post(url, json=body)
    assert r.status_code < 500, r.text
    if r.status_code >= 400:
        _one_error(r)


@pytest.fixture(scope="module")
def fuzz_client():
    with TestClient(create_app("random", max_games=64), raise_server_exceptions=False) as c:
        gid = c.post("/api/games", json={"agent": "random", "rules": SHORT}).json()["id"]
        yield c, gid


def test_soak_threads_against_a_real_server_no_5xx_no_hang():
    """A bounded soak of ``serve``: 6 threads x 40 requests on 127.0.0.1, good and bad bodies mixed,
    games evicted under load (max_games=3): no 5xx, every error one JSON object, done in 60 s."""
    import random

    import httpx

    bad = [("POST", "/api/games", {"content": b"{oops", "headers": JSON}),
           ("POST", "/api/games", {"json": {"agent": "slm:slm=/etc/passwd"}}),
           ("POST", "/api/games", {"json": {"agent": "random", "human": 3}}),
           ("GET", "/no/such/route", {}), ("PATCH", "/api/games", {}),
           ("POST", "/api/games", {"content": b"[" * 50_000, "headers": JSON}),
           ("POST", "/api/games", {"content": b"\xff" * 10, "headers": JSON}),
           ("POST", "/api/reviews", {"json": {"text": "not a record"}})]
    failures, statuses = [], []

    def worker(seed: int) -> None:
        rng = random.Random(seed)
        games: list[str] = []
        with httpx.Client(base_url=base, timeout=20) as http:
            for _ in range(40):
                roll = rng.random()
                if roll < 0.25 or not games:
                    r = http.post("/api/games", json={"agent": "random", "rules": SHORT, "human": rng.choice("wb")})
                    if r.status_code == 201:
                        games.append(r.json()["id"])
                elif roll < 0.5:
                    r = http.post(f"/api/games/{rng.choice(games)}/agent")
                elif roll < 0.65:
                    r = http.get(f"/api/games/{rng.choice(games)}")
                elif roll < 0.7:
                    r = http.post("/api/games", content=_chunks(2, 1 << 20), headers=JSON)
                else:
                    method, path, kwargs = rng.choice(bad)
                    r = http.request(method, path, **kwargs)
                statuses.append(r.status_code)
                if r.status_code >= 500 or (r.status_code >= 400 and list(r.json()) != ["error"]):
                    failures.append((r.request.method, r.request.url.path, r.status_code, r.text[:200]))

    t0 = time.monotonic()
    with running_server(create_app("random", max_games=3)) as base:
        threads = [threading.Thread(target=worker, args=(i,), daemon=True) for i in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(max(0.0, 60 - (time.monotonic() - t0)))
        assert not any(t.is_alive() for t in threads), "the soak did not finish in 60 s"
    assert not failures, failures[:5]
    assert len(statuses) == 240 and {201, 404, 413, 403} <= set(statuses)
