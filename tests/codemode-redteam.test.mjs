// End to end: the red-team list of run_code (tests/fixtures/codemode-redteam.mjs),
// each escape tried by a script in workerd and checked to have failed.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { OWNER, startHearth, tgUpdate } from "./support/hearth.mjs";
import { redTeam } from "./support/codemode.mjs";
import { ESCAPES } from "./fixtures/codemode-redteam.mjs";

let team;
before(async () => {
  team = await redTeam(startHearth);
});
after(() => team?.close());

describe("run_code red team: every escape fails", () => {
  for (const escape of ESCAPES) {
    test(escape.name, async () => {
      const { held, result } = await team.attempt(escape);
      assert.ok(held, `escaped: ${result.isError ? "(error) " : ""}${result.text.slice(0, 800)}`);
    });
  }

  test("and the session still answers", async () => {
    const h = team.h;
    h.llm.push({ text: "still here" });
    const sent = h.telegram.sent().length;
    await h.sendUpdate(tgUpdate({ from: OWNER, text: "are you there?" }));
    await h.telegram.untilSent(sent + 1, { timeoutMs: 10000 });
    assert.equal(h.telegram.sent().at(-1).body.text, "still here");
  });
});
