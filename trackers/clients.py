"""One small class per kind of tracker, each building its documented REST requests:
GitHub REST v3, GitLab REST v4, Jira Cloud REST v3. Every call goes through
``web.outbound`` (the SSRF guard, the timeouts, the retries with backoff) and answers an
``Answer`` (the last response's code and body, and why it failed)."""

from __future__ import annotations

import base64
import json
import time
from dataclasses import dataclass
from urllib.parse import quote

from web.outbound import Answer, exchange, with_retries

from .crypto import decrypt
from .models import Tracker

USER_AGENT = "Flakeboard-Trackers/1"
MAX_ANSWER = 1024 * 1024


@dataclass(frozen=True)
class Opened:
    key: str
    url: str


def web_url(url) -> str:
    """The issue's address as the tracker answered it, if it is one a page may link to."""
    return url if isinstance(url, str) and url.startswith(("https://", "http://")) else ""


def answer_json(answer: Answer) -> dict:
    try:
        found = json.loads(answer.body or b"{}")
    except ValueError:
        return {}
    return found if isinstance(found, dict) else {}


class Client:
    """What every kind does: one harmless read, open, comment, close, read the state."""

    key_field = ""  # the field of a created issue's answer that names it

    def __init__(self, tracker: Tracker, *, sleep=time.sleep):
        self.tracker = tracker
        self.site = tracker.site.rstrip("/")
        self.sleep = sleep
        self._token = decrypt(tracker.token_encrypted)

    def auth(self) -> dict[str, str]:
        raise NotImplementedError

    def call(self, method: str, path: str, payload: dict | None = None) -> Answer:
        headers = {"Accept": "application/json", **self.auth()}
        body = None
        if payload is not None:
            body = json.dumps(payload).encode()
            headers["Content-Type"] = "application/json"
        return with_retries(
            lambda: exchange(method, self.site + path, body=body, headers=headers,
                             max_bytes=MAX_ANSWER, user_agent=USER_AGENT), self.sleep)

    def page(self, key: str, found: dict) -> str:
        """The created issue's web address, from its key and the answer's fields."""
        raise NotImplementedError

    def opened(self, answer: Answer) -> tuple[Answer, Opened | None]:
        """What ``open`` answers: the issue the tracker created, or None when it refused it
        (or answered no key)."""
        found = answer_json(answer)
        if not answer.ok or self.key_field not in found:
            return answer, None
        key = str(found[self.key_field])
        return answer, Opened(key, self.page(key, found))


class ProjectIssues(Client):
    """GitHub's and GitLab's issues: under the repository's (the project's) path, each named
    by a number, its web address a field of the answer, closed when its state says so. The
    connection's test reads the repository itself."""

    page_field = ""  # the answer's field holding the issue's web address
    notes = ""  # where an issue's comments are posted, under its path
    # What the test reads, and the field of its answer that names it.
    checked, name_field = "", ""

    @property
    def project(self) -> str:
        """The repository's (the project's) path on the API."""
        raise NotImplementedError

    @property
    def issues(self) -> str:
        return f"{self.project}/issues"

    def check(self) -> tuple[Answer, str]:
        answer = self.call("GET", self.project)
        return answer, f"{self.checked} {answer_json(answer).get(self.name_field, '?')}"

    def page(self, key: str, found: dict) -> str:
        return web_url(found.get(self.page_field))

    def comment(self, key: str, text: str) -> Answer:
        return self.call("POST", f"{self.issues}/{key}/{self.notes}", {"body": text})

    def is_closed(self, key: str) -> tuple[Answer, bool]:
        answer = self.call("GET", f"{self.issues}/{key}")
        return answer, answer_json(answer).get("state") == "closed"


class GitHub(ProjectIssues):
    """GitHub REST v3: a repository "owner/name", a fine-grained token."""

    key_field, page_field, notes = "number", "html_url", "comments"
    checked, name_field = "repository", "full_name"

    def auth(self):
        return {"Authorization": f"Bearer {self._token}",
                "Accept": "application/vnd.github+json", "X-GitHub-Api-Version": "2022-11-28"}

    @property
    def project(self) -> str:
        return "/repos/" + "/".join(quote(part, safe="") for part in
                                    self.tracker.project.split("/", 1))

    def open(self, title: str, body: str, assignee: str | None) -> tuple[Answer, Opened | None]:
        payload = {"title": title, "body": body, "labels": self.tracker.label_list}
        answer = self.call("POST", self.issues,
                           {**payload, "assignees": [assignee]} if assignee else payload)
        if answer.response_code == 422 and assignee:  # a handle GitHub cannot assign
            answer = self.call("POST", self.issues, payload)
        return self.opened(answer)

    def close(self, key: str) -> Answer:
        return self.call("PATCH", f"{self.issues}/{key}",
                         {"state": "closed", "state_reason": "completed"})


class GitLab(ProjectIssues):
    """GitLab REST v4: a project id or path, a project access token."""

    key_field, page_field, notes = "iid", "web_url", "notes"
    checked, name_field = "project", "path_with_namespace"

    def auth(self):
        return {"PRIVATE-TOKEN": self._token}

    @property
    def project(self) -> str:
        return "/api/v4/projects/" + quote(self.tracker.project, safe="")

    def open(self, title: str, body: str, assignee: str | None) -> tuple[Answer, Opened | None]:
        # GitLab assigns by user id, which a handle does not give: the body names the owner.
        return self.opened(self.call("POST", self.issues, {
            "title": title, "description": body, "labels": ",".join(self.tracker.label_list)}))

    def close(self, key: str) -> Answer:
        return self.call("PUT", f"{self.issues}/{key}", {"state_event": "close"})


def adf(text: str) -> dict:
    """Plain text as Atlassian Document Format: a paragraph per line."""
    return {"type": "doc", "version": 1, "content": [
        {"type": "paragraph", "content": [{"type": "text", "text": line}]}
        for line in text.splitlines() if line.strip()]}


class Jira(Client):
    """Jira Cloud REST v3: a site, a project key, an issue type, an e-mail and API token."""

    key_field = "key"

    def auth(self):
        pair = f"{self.tracker.email}:{self._token}".encode()
        return {"Authorization": "Basic " + base64.b64encode(pair).decode()}

    def check(self) -> tuple[Answer, str]:
        answer = self.call("GET", "/rest/api/3/myself")
        return answer, f"account {answer_json(answer).get('displayName', '?')}"

    def open(self, title: str, body: str, assignee: str | None) -> tuple[Answer, Opened | None]:
        # Jira assigns by account id, which a handle does not give: the body names the owner.
        answer = self.call("POST", "/rest/api/3/issue", {"fields": {
            "project": {"key": self.tracker.project}, "summary": title[:255],
            "issuetype": {"name": self.tracker.issue_type or "Bug"},
            "labels": self.tracker.label_list, "description": adf(body)}})
        return self.opened(answer)

    def page(self, key: str, found: dict) -> str:
        return f"{self.site}/browse/{quote(key)}"

    def comment(self, key: str, text: str) -> Answer:
        return self.call("POST", f"/rest/api/3/issue/{quote(key)}/comment", {"body": adf(text)})

    def close(self, key: str) -> Answer:
        """The first transition into a done status."""
        path = f"/rest/api/3/issue/{quote(key)}/transitions"
        answer = self.call("GET", path)
        if not answer.ok:
            return answer
        done = [t["id"] for t in answer_json(answer).get("transitions", [])
                if t.get("to", {}).get("statusCategory", {}).get("key") == "done"]
        if not done:
            return Answer(False, answer.attempts, answer.response_code,
                          "no transition leads to a done status")
        return self.call("POST", path, {"transition": {"id": done[0]}})

    def is_closed(self, key: str) -> tuple[Answer, bool]:
        answer = self.call("GET", f"/rest/api/3/issue/{quote(key)}?fields=status")
        status = answer_json(answer).get("fields", {}).get("status", {})
        return answer, status.get("statusCategory", {}).get("key") == "done"


KINDS = {Tracker.Kind.GITHUB: GitHub, Tracker.Kind.GITLAB: GitLab, Tracker.Kind.JIRA: Jira}
SITES = {Tracker.Kind.GITHUB: "https://api.github.com", Tracker.Kind.GITLAB: "https://gitlab.com"}


def client_for(tracker: Tracker, *, sleep=time.sleep) -> Client:
    return KINDS[tracker.kind](tracker, sleep=sleep)
