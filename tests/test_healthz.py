"""GET /healthz: 200 while the database answers, 503 when it does not. No token needed."""

from django.db import OperationalError


class DeadDatabase:
    def cursor(self):
        raise OperationalError("connection refused")


def test_healthy_when_the_database_answers(board):
    answer = board.get("/healthz")
    assert (answer.status, answer.json) == (200, {"database": "ok"})
    assert "no-cache" in answer.headers["Cache-Control"]


def test_503_when_the_database_does_not_answer(board, monkeypatch):
    monkeypatch.setattr("ledger.views.home.connection", DeadDatabase())
    answer = board.get("/healthz")
    assert answer.status == 503
    assert answer.json["database"] != "ok"
