// Lint: typescript-eslint with type information; floating promises and
// import cycles are errors; and the package boundaries (docs/architecture.md,
// "Package boundaries"), tested by scripts/lint-boundaries.test.ts:
//   - no one reaches into another package's files by a relative path
//     (`../../api/src/…`): import the package (`@choreo/api/testing`);
//   - kit imports no service;
//   - an actor (scheduler, replication, endpoints, node agent) never imports
//     the api: it talks to it through `@choreo/kit/client` over the bus. One
//     exception: an actor's *test* files may import `@choreo/api/testing`,
//     the test stack that runs a real api on real NATS and Redis.
import tseslint from "typescript-eslint";
import importX, { createNodeResolver } from "eslint-plugin-import-x";

const SERVICES = ["api", "cli", "endpoints", "node-agent", "replication", "scheduler"];
const ACTORS = ["endpoints", "node-agent", "replication", "scheduler"];

/** The boundary zones; `apiExcept` are the api paths an actor file may import. */
function boundaryZones(apiExcept) {
  return [
    {
      target: "./services/kit",
      from: SERVICES.map((s) => `./services/${s}`),
      message: "kit imports no service: what a service and kit share belongs in kit.",
    },
    {
      target: ACTORS.map((a) => `./services/${a}`),
      from: "./services/api",
      except: apiExcept,
      message: "An actor never imports the api: it talks to it over the bus through @choreo/kit/client (tests: only @choreo/api/testing).",
    },
  ];
}

export default tseslint.config(
  { ignores: ["**/node_modules/**", "services/kit/src/gen/**", "**/*.js", "**/*.mjs", ".choreo/**"] },
  ...tseslint.configs.recommended,
  {
    files: ["**/*.ts"],
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    plugins: { "import-x": importX },
    settings: {
      // Resolves `./x.js` to x.ts and `@choreo/…` through the workspace links
      // and the packages' `exports` to the real files under services/.
      "import-x/resolver-next": [
        createNodeResolver({
          extensions: [".ts", ".js", ".mjs", ".json", ".node"],
          extensionAlias: { ".js": [".ts", ".js"] },
          conditionNames: ["import", "default"],
        }),
      ],
    },
    rules: {
      "@typescript-eslint/no-floating-promises": [
        "error",
        { allowForKnownSafeCalls: [{ from: "package", package: "node:test", name: ["it", "describe", "test", "before", "after", "beforeEach", "afterEach"] }] },
      ],
      "@typescript-eslint/no-misused-promises": ["error", { checksVoidReturn: { arguments: false } }],
      "@typescript-eslint/no-explicit-any": "error",
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_", destructuredArrayIgnorePattern: "^_" }],
      "@typescript-eslint/no-non-null-assertion": "off",
      "import-x/no-cycle": ["error", { maxDepth: 10 }],
      "import-x/no-relative-packages": "error",
      "import-x/no-restricted-paths": ["error", { basePath: import.meta.dirname, zones: boundaryZones([]) }],
    },
  },
  {
    // The one exception: an actor's tests may start the api's test stack.
    files: ACTORS.map((a) => `services/${a}/**/*.test.ts`),
    rules: {
      "import-x/no-restricted-paths": ["error", { basePath: import.meta.dirname, zones: boundaryZones(["./src/testing"]) }],
    },
  },
);
