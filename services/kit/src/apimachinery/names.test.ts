import assert from "node:assert/strict";
import { describe, it } from "node:test";
import fc from "fast-check";
import { generateName, validateDns1035Label, validateDns1123Label, validateDns1123Subdomain, validateQualifiedName } from "./names.js";

const SUBDOMAIN_MSG =
  "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
const LABEL_MSG =
  "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
const DNS1035_MSG =
  "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";

describe("names", () => {
  it("DNS-1123 subdomains", () => {
    for (const ok of ["a", "example.com", "my-app.v1", "0", "a".repeat(253)]) assert.deepEqual(validateDns1123Subdomain(ok), [], ok);
    for (const bad of ["", "A", "-a", "a-", "a..b", ".a", "a_b", "a b"]) assert.deepEqual(validateDns1123Subdomain(bad), [SUBDOMAIN_MSG], bad);
    assert.deepEqual(validateDns1123Subdomain("a".repeat(254)), ["must be no more than 253 characters"]);
  });

  it("DNS-1123 labels", () => {
    for (const ok of ["a", "my-name", "123-abc", "a".repeat(63)]) assert.deepEqual(validateDns1123Label(ok), [], ok);
    for (const bad of ["", "a.b", "Abc", "-a", "a-"]) assert.deepEqual(validateDns1123Label(bad), [LABEL_MSG], bad);
    assert.deepEqual(validateDns1123Label("a".repeat(64)), ["must be no more than 63 characters"]);
  });

  it("DNS-1035 labels (services) start with a letter", () => {
    for (const ok of ["my-name", "abc-123", "a"]) assert.deepEqual(validateDns1035Label(ok), [], ok);
    for (const bad of ["1abc", "", "a-", "A"]) assert.deepEqual(validateDns1035Label(bad), [DNS1035_MSG], bad);
    assert.deepEqual(validateDns1035Label("a".repeat(64)), ["must be no more than 63 characters"]);
  });

  it("qualified names", () => {
    for (const ok of ["MyName", "my.name", "123-abc", "example.com/MyName", "a/b"]) assert.deepEqual(validateQualifiedName(ok), [], ok);
    assert.deepEqual(validateQualifiedName("a/"), [
      "name part must be non-empty",
      "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
    ]);
    assert.deepEqual(validateQualifiedName("UPPER.com/x"), [`prefix part ${SUBDOMAIN_MSG}`]);
    assert.equal(validateQualifiedName("a/b/c").length, 1);
  });

  it("generateName appends 5 characters of Kubernetes' alphabet and keeps names ≤ 63", () => {
    const n = generateName("web-");
    assert.match(n, /^web-[bcdfghjklmnpqrstvwxz2456789]{5}$/);
    assert.equal(generateName("x".repeat(80)).length, 63);
    assert.deepEqual(validateDns1123Label(generateName("a".repeat(70))), []);
  });

  it("lower-case labels are also subdomains; DNS-1035 labels are also DNS-1123 labels (property)", () => {
    const label = fc.stringMatching(/^[a-z0-9-]{1,70}$/);
    fc.assert(
      fc.property(label, (s) => {
        if (validateDns1123Label(s).length === 0) assert.deepEqual(validateDns1123Subdomain(s), []);
        if (validateDns1035Label(s).length === 0) assert.deepEqual(validateDns1123Label(s), []);
      }),
      { seed: 8080, numRuns: 300 },
    );
  });
});
