#!/usr/bin/env python3
"""A small agent runtime that follows the seed's rules, driven by Twice's runtime protocol.

Standard library only; its ledger is a SQLite file. The rules: a key per call
(`<run>:<call id>`) passed to billing; the call reserved in the ledger before it runs; one
attempt for anything that changes the world (reads get three); a call that may have landed
is `indeterminate`, never run again by itself; the reconcile hook looks it up by key; if the
hook cannot tell, the run pauses until someone settles the call. A checkpoint saved with a
version check makes a second process on the same run stand down.

    twice-sim replay --runtime 'python3 examples/runtimes/careful.py' levels/
"""

import json
import sqlite3

from twice_protocol import Billing, Twice

GUARDS = ["write_retry_rule", "tool_contract", "pause_on_indeterminate", "ledger", "atomic_reservation",
          "key_downstream", "checkpoint_version", "reconcile_hook", "key_per_call", "no_lease_expiry",
          "no_reflex_compensation", "refusal_is_failed", "key_retention", "lookup_settle"]
MARKS = ["load checkpoint", "reserve", "record outcome", "reconcile", "settle not found", "wait to look again",
         "save checkpoint", "park", "stand down", "wait for a person", "exit"]
UNKNOWN = ("started", "indeterminate")


class StandDown(Exception):
    """Another process saved the run since this one loaded it: it drives the run now."""


class Runtime:
    def __init__(self):
        self.twice = Twice()
        hello = self.twice.hello
        self.run_id, self.worker = hello["run"], hello["worker"]
        self.tools = {tool["name"]: tool for tool in hello["tools"]}
        self.billing = Billing(hello["billing"], hello["http_timeout_ms"], hello["tools"])
        self.db = sqlite3.connect(hello["ledger"], timeout=10, isolation_level=None)
        self.db.executescript("""
            CREATE TABLE IF NOT EXISTS calls (key TEXT PRIMARY KEY, arguments TEXT, status TEXT, result TEXT,
                owner TEXT, created_ms INTEGER, updated_ms INTEGER);
            CREATE TABLE IF NOT EXISTS checkpoints (run TEXT PRIMARY KEY, version INTEGER, state TEXT);""")
        self.twice.answer_hello("careful.py 1.0 (Python, SQLite)", GUARDS, MARKS)
        self.version, self.state = 0, {"transcript": [], "status": "running", "pending": None}

    # The ledger: each decision one transaction.
    def record(self, key):
        return self.db.execute("SELECT status, result, arguments, created_ms, updated_ms FROM calls WHERE key = ?",
                               (key,)).fetchone()

    def reserve(self, key, call):
        """None: reserved, the call runs; otherwise the record the key already has."""
        self.db.execute("BEGIN IMMEDIATE")
        try:
            row = self.db.execute("SELECT version FROM checkpoints WHERE run = ?", (self.run_id,)).fetchone()
            if (row[0] if row else 0) != self.version:
                raise StandDown()
            existing = self.record(key)
            if existing is None or existing[0] == "failed":
                self.db.execute("INSERT OR REPLACE INTO calls VALUES (?, ?, 'started', NULL, ?, ?, ?)",
                                (key, json.dumps(call["arguments"], sort_keys=True), self.worker,
                                 existing[3] if existing else self.twice.now_ms, self.twice.now_ms))
                existing = None
            return existing
        finally:
            self.db.execute("COMMIT")

    def settle(self, key, status, result, only_if_unknown=True):
        """Compare-and-set from an unknown status; False when someone settled it first."""
        guard = " AND status IN ('started', 'indeterminate')" if only_if_unknown else ""
        changed = self.db.execute(f"UPDATE calls SET status = ?, result = ?, updated_ms = MAX(updated_ms, ?) "
                                  f"WHERE key = ?{guard}", (status, result, self.twice.now_ms, key)).rowcount
        return changed == 1

    def save(self, still_failed=None):
        self.twice.mark("save checkpoint")
        self.db.execute("BEGIN IMMEDIATE")
        try:
            if still_failed and self.record(still_failed)[0] != "failed":
                raise StandDown()  # the failed call was taken over and run again by another process
            text = json.dumps(self.state)
            if self.version == 0:
                saved = self.db.execute("INSERT OR IGNORE INTO checkpoints VALUES (?, 1, ?)", (self.run_id, text))
            else:
                saved = self.db.execute("UPDATE checkpoints SET version = version + 1, state = ? "
                                        "WHERE run = ? AND version = ?", (text, self.run_id, self.version))
            if saved.rowcount != 1:
                raise StandDown()
            self.version += 1
        finally:
            self.db.execute("COMMIT")

    # The run.
    def main(self):
        for tool in self.tools.values():  # the tool contract, before anything runs
            if tool["side_effect"] != "read" and (tool.get("attempts", 1) != 1 or not tool.get("takes_key", True)):
                self.twice.mark("wait for a person")
                return
        try:
            self.twice.mark("load checkpoint")
            row = self.db.execute("SELECT version, state FROM checkpoints WHERE run = ?", (self.run_id,)).fetchone()
            if row:
                self.version, self.state = row[0], json.loads(row[1])
            if self.state["status"] in ("completed", "failed"):
                return self.twice.mark("exit", status=self.state["status"])
            if self.state["status"] == "awaiting_reconciliation":
                if not self.settled(self.state["pending"]):
                    return
            while self.state["status"] == "running":
                decision = self.twice.ask_model(self.state["transcript"])
                if decision["decision"] != "call":
                    self.state["status"] = "completed" if decision["decision"] == "done" else "failed"
                    self.save()
                    return self.twice.mark("exit", status=self.state["status"])
                if not self.call(decision["call"]):
                    return
        except StandDown:
            self.twice.mark("stand down")

    def call(self, call):
        """Runs one call to its end; False when the run pauses or stops."""
        key = f"{self.run_id}:{call['id']}"
        self.twice.mark("reserve", call=call["id"], key=key)
        existing = self.reserve(key, call)
        if existing is not None:
            if existing[2] != json.dumps(call["arguments"], sort_keys=True):
                call = dict(call, arguments=json.loads(existing[2]))  # a reworded replay: the recorded call
            if existing[0] == "completed":
                return self.tell(call, "result", existing[1])
            if existing[0] == "compensated":
                return self.tell(call, "compensated", "")
            return self.unknown(call, key)
        attempts = 3 if self.tools[call["tool"]]["side_effect"] == "read" else 1
        for attempt in range(1, attempts + 1):
            self.twice.mark("send", call=call["id"], key=key, attempt=attempt)
            kind, answer = self.billing.run(call, key if self.tools[call["tool"]].get("takes_key", True) else None)
            if kind != "unknown":
                break
        # A write that may have landed is unknown; a read that timed out each time did nothing.
        status = {"result": "completed", "unknown": "indeterminate" if attempts == 1 else "failed"}.get(kind, "failed")
        answer = answer if kind != "unknown" or attempts == 1 else f"timed out {attempts} times"
        self.twice.mark("record outcome", call=call["id"], key=key, status=status)
        self.settle(key, status, answer)
        if status == "completed":
            return self.tell(call, "result", answer)
        if status == "failed":
            return self.tell(call, "failed", answer, still_failed=key)
        return self.unknown(call, key)

    def unknown(self, call, key, hook_asked=False):
        """Unknown is an answer: look it up, or pause until someone settles it."""
        tool = self.tools[call["tool"]]
        while tool.get("reconcile") and not hook_asked:
            self.twice.mark("reconcile", call=call["id"], key=key)
            receipt = self.billing.look_up(key)
            if receipt is not None:
                self.settle(key, "completed", receipt)
                return self.truth(call, key)
            _, _, _, created_ms, updated_ms = self.record(key)
            settle, retention = tool.get("lookup_settle_ms"), tool.get("key_retention_ms")
            if retention and self.twice.now_ms - created_ms >= retention or not settle:
                hook_asked = True  # expired, or nothing declared: nothing found proves nothing
            elif self.twice.now_ms - updated_ms < settle:
                self.twice.mark("wait to look again", call=call["id"], key=key)
            else:
                self.twice.mark("settle not found", call=call["id"], key=key)
                self.settle(key, "failed", "not found past the lookup's settle time")
                return self.truth(call, key)
        if self.state["status"] != "awaiting_reconciliation":
            self.state.update(status="awaiting_reconciliation", pending=call)
            self.save()
        self.twice.mark("park", call=call["id"], key=key)
        self.twice.wait_for_wake()
        return self.settled(call)

    def settled(self, call):
        """A paused run's call: told its truth when someone settled it, else looked at again."""
        key = f"{self.run_id}:{call['id']}"
        if self.record(key)[0] in UNKNOWN:
            return self.unknown(call, key)
        return self.truth(call, key)

    def truth(self, call, key):
        status, result = self.record(key)[:2]
        if status in UNKNOWN:
            return self.unknown(call, key, hook_asked=True)
        if status == "failed":
            return self.tell(call, "did_not_take_effect", "", still_failed=key)
        return self.tell(call, "result" if status == "completed" else "compensated", result or "")

    def tell(self, call, told, content, still_failed=None):
        self.state["transcript"].append({"call": call["id"], "told": told, "content": content or ""})
        self.state.update(status="running", pending=None)
        self.save(still_failed)
        return True


if __name__ == "__main__":
    Runtime().main()
