"""The 2026-07-28 multi-round-trip flow written the SDK 2.x way, through the runtime: a tool
(or prompt) returns an `InputRequiredResult`, which reaches the node with its `resultType`;
the node's retry passes the client's `inputResponses` and `requestState` as the call's
`input`, which the tool reads from `ctx.input_responses` / `ctx.request_state`.

Uses the conformance fixture (services/runner/tests/fixtures/conformance-repo) on the test
venv's SDK 2.x.
"""

from __future__ import annotations

import os
import unittest

from .rtclient import REPO_ROOT, RuntimeProcess, text_of

CONFORMANCE_REPO = os.path.join(REPO_ROOT, "services", "runner", "tests", "fixtures", "conformance-repo")
ACCEPT_ADA = {"action": "accept", "content": {"name": "Ada"}}


class MultiRoundTripTest(unittest.TestCase):
    rt: RuntimeProcess

    @classmethod
    def setUpClass(cls) -> None:
        cls.rt = RuntimeProcess(CONFORMANCE_REPO, timeout=60)

    @classmethod
    def tearDownClass(cls) -> None:
        cls.rt.close()

    def test_a_tool_asks_then_answers(self) -> None:
        first = self.rt.call_tool("test_input_required_result_elicitation")["result"]
        self.assertEqual(first["resultType"], "input_required")  # kept: the node tells results apart by it
        self.assertEqual(first["inputRequests"]["user_name"]["method"], "elicitation/create")
        retry = self.rt.call_tool(
            "test_input_required_result_elicitation", input={"inputResponses": {"user_name": ACCEPT_ADA}}
        )["result"]
        self.assertNotIn("resultType", retry)  # an ordinary result: the node adds "complete"
        self.assertEqual(text_of(retry), "Hello, Ada!")

    def test_state_round_trips_and_tampering_is_refused(self) -> None:
        first = self.rt.call_tool("test_input_required_result_multi_round")["result"]
        state = first["requestState"]
        second = self.rt.call_tool(
            "test_input_required_result_multi_round",
            input={"inputResponses": {"step1": ACCEPT_ADA}, "requestState": state},
        )["result"]
        self.assertEqual(list(second["inputRequests"]), ["step2"])
        done = self.rt.call_tool(
            "test_input_required_result_multi_round",
            input={
                "inputResponses": {"step2": {"action": "accept", "content": {"color": "teal"}}},
                "requestState": second["requestState"],
            },
        )["result"]
        self.assertEqual(text_of(done), "Ada likes teal")
        # a different last hex digit of the MAC: replacing it with a fixed "0" left the state
        # intact whenever the MAC already ended in 0 (one run in sixteen)
        other = "1" if state[-1] == "0" else "0"
        tampered = self.rt.call_tool(
            "test_input_required_result_multi_round", input={"requestState": state[:-1] + other}
        )
        self.assertEqual(tampered["error"]["code"], -32602, tampered)

    def test_malformed_answers_are_invalid_params(self) -> None:
        reply = self.rt.call_tool(
            "test_input_required_result_elicitation", input={"inputResponses": {"user_name": "not a result"}}
        )
        self.assertEqual(reply["error"]["code"], -32602, reply)
        self.assertIn("inputResponses", reply["error"]["message"])

    def test_a_prompt_asks_too(self) -> None:
        first = self.rt.request("get_prompt", name="test_input_required_result_prompt")["result"]
        self.assertEqual(first["resultType"], "input_required")
        answer = {"user_context": {"action": "accept", "content": {"context": "tests"}}}
        done = self.rt.request(
            "get_prompt", name="test_input_required_result_prompt", input={"inputResponses": answer}
        )["result"]
        self.assertEqual(done["messages"][0]["content"]["text"], "Prompt with context: tests")


if __name__ == "__main__":
    unittest.main()
