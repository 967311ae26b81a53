"""The browser board's server (``frontends.server``) and its server-side games (``frontends.session``):
hop-by-hop input answered by the rules engine, reasons for illegal input, records, limits, several
independent games, and searches stopped by a closed page, undo or the time limit."""

from __future__ import annotations

import json
import threading
import time

import pytest
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
