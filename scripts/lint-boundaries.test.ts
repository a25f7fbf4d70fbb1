// The package boundaries of eslint.config.js, tried on planted imports: the
// real config (resolver, zones, the actors' test exception) over source text
// that is never written to disk. Only the boundary rules run (type-aware
// rules need the files in the TypeScript project).
import assert from "node:assert/strict";
import path from "node:path";
import { describe, it } from "node:test";
import { ESLint } from "eslint";

const ROOT = path.resolve(import.meta.dirname, "..");
const BOUNDARY_RULES = new Set(["import-x/no-relative-packages", "import-x/no-restricted-paths"]);

const eslint = new ESLint({
  cwd: ROOT,
  overrideConfig: { languageOptions: { parserOptions: { projectService: false } } },
  ruleFilter: ({ ruleId }) => BOUNDARY_RULES.has(ruleId),
});

/** The boundary rules that fire on `code` as if it were the file at `file` (relative to the repository). */
async function violations(file: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath: path.join(ROOT, file) });
  assert.ok(result);
  const fatal = result.messages.filter((m) => m.fatal);
  assert.deepEqual(fatal, [], "the planted file parses");
  return [...new Set(result.messages.map((m) => m.ruleId ?? ""))].sort();
}

describe("package boundaries (eslint)", () => {
  it("an actor reaching into the api's src by a relative path fails twice: a relative reach, and an actor importing the api", async () => {
    const v = await violations(
      "services/scheduler/src/planted.ts",
      `import { startStack } from "../../api/src/testing/stack.js";\nexport const s = startStack;\n`,
    );
    assert.deepEqual(v, ["import-x/no-relative-packages", "import-x/no-restricted-paths"]);
  });

  it("an actor importing the api as a package fails", async () => {
    for (const actor of ["scheduler", "replication", "endpoints", "node-agent"]) {
      const v = await violations(`services/${actor}/src/planted.ts`, `import * as http from "@choreo/api/http";\nexport const h = http;\n`);
      assert.deepEqual(v, ["import-x/no-restricted-paths"], actor);
    }
  });

  it("an actor's production code may not start the api's test stack either", async () => {
    const v = await violations("services/node-agent/src/planted.ts", `import { startStack } from "@choreo/api/testing";\nexport const s = startStack;\n`);
    assert.deepEqual(v, ["import-x/no-restricted-paths"]);
  });

  it("an actor's test may import @choreo/api/testing, and nothing else of the api", async () => {
    assert.deepEqual(
      await violations("services/scheduler/src/planted.test.ts", `import { startStack } from "@choreo/api/testing";\nexport const s = startStack;\n`),
      [],
    );
    assert.deepEqual(await violations("services/scheduler/src/planted.test.ts", `import * as http from "@choreo/api/http";\nexport const h = http;\n`), [
      "import-x/no-restricted-paths",
    ]);
    assert.deepEqual(
      await violations(
        "services/node-agent/src/dns/planted.test.ts",
        `import { startStack } from "../../../api/src/testing/stack.js";\nexport const s = startStack;\n`,
      ),
      ["import-x/no-relative-packages"],
    );
  });

  it("kit importing a service fails, as a package or by a relative path", async () => {
    assert.deepEqual(
      await violations("services/kit/src/client/planted.ts", `import { startStack } from "@choreo/api/testing";\nexport const s = startStack;\n`),
      ["import-x/no-restricted-paths"],
    );
    assert.deepEqual(
      await violations("services/kit/src/client/planted.ts", `import { fakeNode } from "../../../scheduler/src/testing.js";\nexport const f = fakeNode;\n`),
      ["import-x/no-relative-packages", "import-x/no-restricted-paths"],
    );
  });

  it("integration tests and benches reaching into a service's src fail", async () => {
    assert.deepEqual(
      await violations("integration-tests/planted.test.ts", `import { NodeAgent } from "../services/node-agent/src/agent.js";\nexport const n = NodeAgent;\n`),
      ["import-x/no-relative-packages"],
    );
    assert.deepEqual(await violations("bench/planted.ts", `import { schedule } from "../services/scheduler/src/stack.js";\nexport const s = schedule;\n`), [
      "import-x/no-relative-packages",
    ]);
  });

  it("legal imports pass: kit's modules, the package's own files, another service through its exports where allowed", async () => {
    assert.deepEqual(
      await violations(
        "services/scheduler/src/planted.ts",
        `import { ApiClient } from "@choreo/kit/client";\nimport { SchedulerCache } from "./cache.js";\nexport const x = [ApiClient, SchedulerCache];\n`,
      ),
      [],
    );
    assert.deepEqual(
      await violations("services/kit/src/client/planted.ts", `import { startNats } from "../process/index.js";\nexport const s = startNats;\n`),
      [],
    );
    assert.deepEqual(
      await violations("services/api/src/logs/planted.test.ts", `import { LogServer } from "@choreo/node-agent/logs";\nexport const l = LogServer;\n`),
      [],
    );
    assert.deepEqual(
      await violations(
        "integration-tests/planted.test.ts",
        `import { NodeAgent } from "@choreo/node-agent/agent";\nimport { startStack } from "@choreo/api/testing";\nexport const x = [NodeAgent, startStack];\n`,
      ),
      [],
    );
  });
});
