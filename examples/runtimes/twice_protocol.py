"""Twice's runtime protocol, version 1, for runtimes written in Python: the JSON lines on
standard input and output, and the billing world's tools over HTTP. Standard library only.

Twice starts one process per worker. It says `hello`; the runtime answers `hello` with the
guards it implements and the steps it marks; from then on the runtime marks each step before
it takes it (`mark`, then it waits for `go`) and asks the model for each next move (`model`,
then it waits for `decision`). A parked run waits for `wake`. Every message from Twice carries
`now_ms`, the level's clock: use it, not the machine's, wherever the runtime reads the time.
"""

import http.client
import json
import sys
import urllib.error
import urllib.request

PROTOCOL = 1


class Twice:
    """The protocol's two ends."""

    def __init__(self):
        self.now_ms = 0
        self.hello = self.receive("hello")

    def send(self, message):
        sys.stdout.write(json.dumps(message) + "\n")
        sys.stdout.flush()

    def receive(self, kind):
        line = sys.stdin.readline()
        if not line:
            sys.exit(0)  # Twice is gone: so is this process.
        message = json.loads(line)
        if message.get("type") != kind:
            raise RuntimeError(f"expected `{kind}` from Twice, got {line.strip()}")
        self.now_ms = message.get("now_ms", self.now_ms)
        return message

    def answer_hello(self, runtime, guards, marks):
        self.send({"type": "hello", "protocol": PROTOCOL, "runtime": runtime, "guards": guards, "marks": marks})

    def mark(self, phase, **fields):
        """Says which step comes next; returns when Twice lets it go."""
        self.send({"type": "mark", "phase": phase, **{name: value for name, value in fields.items() if value is not None}})
        self.receive("go")

    def ask_model(self, transcript):
        self.send({"type": "model", "transcript": transcript})
        return self.receive("decision")

    def wait_for_wake(self):
        self.receive("wake")


class Billing:
    """The billing world's tools, as the hello's `billing` address serves them: each tool does
    the `operation` its declaration names (`credit` when it names none)."""

    def __init__(self, base, timeout_ms, tools=()):
        self.base = base.rstrip("/")
        self.timeout = timeout_ms / 1000
        self.operations = {tool["name"]: tool.get("operation") for tool in tools}

    def operation(self, call):
        named = self.operations.get(call["tool"])
        return named or ("lookup_balance" if call["tool"] == "lookup_balance" else "credit")

    def _call(self, method, path, body=None, key=None):
        """(status, answer) — or (None, None) when no answer came: the request may have landed."""
        headers = {"Content-Type": "application/json"}
        if key is not None:
            headers["Idempotency-Key"] = key
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.base + path, data=data, headers=headers, method=method)
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                return response.status, json.loads(response.read() or b"null")
        except urllib.error.HTTPError as error:
            try:
                return error.code, json.loads(error.read() or b"null")
            except (ValueError, http.client.HTTPException, OSError):
                return None, None
        except (OSError, http.client.HTTPException, ValueError):
            return None, None  # a timeout, or the connection dropped after the request left

    def run(self, call, key):
        """One attempt of a tool call: ("result", receipt), ("rejected", why),
        ("not_attempted", why) or ("unknown", None)."""
        arguments = call["arguments"]
        if call["tool"] == "lookup_balance":
            status, answer = self._call("GET", "/v1/accounts")
            if status == 401:
                return "not_attempted", json.dumps(answer)
            if status == 200:
                for account in answer["accounts"]:
                    if account["id"] == arguments["account"]:
                        return "result", json.dumps({"balance": {"balance_cents": account["balance_cents"]}})
            return "unknown", None
        account = urllib.request.quote(arguments["account"], safe="")
        memo = arguments.get("memo", "")
        operation = self.operation(call)
        if operation == "send_email":
            body = {"account": arguments["account"], "subject": memo, "intent": call["intent"]}
            status, answer = self._call("POST", "/v1/emails", body, key)
        elif operation == "change_owner":
            body = {"owner": arguments.get("owner", ""), "intent": call["intent"], "reason": memo}
            status, answer = self._call("PUT", f"/v1/accounts/{account}/owner", body, key)
        elif operation == "delete_record":
            body = {"intent": call["intent"], "reason": memo}
            status, answer = self._call("DELETE", f"/v1/records/{account}", body, key)
        else:
            body = dict(arguments, intent=call["intent"])
            status, answer = self._call("POST", "/v1/credits", body, key)
        if status == 401:
            return "not_attempted", json.dumps(answer)
        if status in (200, 201):
            return "result", json.dumps(answer, separators=(",", ":"))
        # 404: no such account, or a record already gone ("not found"): billing's answer.
        if status in (404, 409, 422) and isinstance(answer, dict) and "rejected" in answer:
            return "rejected", answer["rejected"]["reason"]
        return "unknown", None

    def look_up(self, key):
        """The reconcile hook: the receipt of the credit billing holds under `key`, or None."""
        status, answer = self._call("GET", "/v1/credits?idempotency_key=" + urllib.request.quote(key))
        if status == 200 and answer.get("credit"):
            credit = answer["credit"]
            receipt = {"applied": {"credit_id": credit["id"], "balance_cents": answer.get("balance_cents") or 0}}
            return json.dumps(receipt, separators=(",", ":"))
        return None
