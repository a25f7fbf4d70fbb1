import assert from "node:assert/strict";
import { ApiError } from "@choreo/kit";

/** Asserts that `p` is refused with an ApiError of this code and reason (and message); returns the error. */
export async function rejects(p: Promise<unknown>, code: number, reason: string, message?: RegExp): Promise<ApiError> {
  try {
    await p;
  } catch (err) {
    assert.ok(err instanceof ApiError, `not an ApiError: ${String(err)}`);
    assert.equal(err.code, code, err.message);
    assert.equal(err.reason, reason, err.message);
    if (message) assert.match(err.message, message);
    return err;
  }
  assert.fail("expected a rejection");
}

/** The code and message `p` was refused with (an ApiError); fails when it was not refused. */
export async function refusal(p: Promise<unknown>): Promise<{ code: number; message: string }> {
  try {
    await p;
  } catch (err) {
    if (err instanceof ApiError) return { code: err.code, message: err.message };
    throw err;
  }
  assert.fail("expected a refusal");
}
