import { randomInt } from "node:crypto";

const DNS1123_LABEL = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const DNS1123_SUBDOMAIN = `${DNS1123_LABEL}(\\.${DNS1123_LABEL})*`;
const DNS1035_LABEL = "[a-z]([-a-z0-9]*[a-z0-9])?";
const QUALIFIED_NAME = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";

const labelRe = new RegExp(`^${DNS1123_LABEL}$`);
const subdomainRe = new RegExp(`^${DNS1123_SUBDOMAIN}$`);
const dns1035Re = new RegExp(`^${DNS1035_LABEL}$`);
const qualifiedRe = new RegExp(`^${QUALIFIED_NAME}$`);

/*
 * Every regex here runs only on input within its length limit (253 or 63
 * characters): a longer string gets the length message alone, so no
 * validation costs more than a few microseconds whatever its input.
 */

/** Validates a DNS-1123 subdomain (most object names); Kubernetes' messages. */
export function validateDns1123Subdomain(name: string): string[] {
  const errs: string[] = [];
  if (name.length > 253) return ["must be no more than 253 characters"]; // the regex runs on capped input only
  if (!subdomainRe.test(name)) {
    errs.push(
      `a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '${DNS1123_SUBDOMAIN}')`,
    );
  }
  return errs;
}

/** Validates a DNS-1123 label (namespaces, container names). */
export function validateDns1123Label(name: string): string[] {
  const errs: string[] = [];
  if (name.length > 63) return ["must be no more than 63 characters"];
  if (!labelRe.test(name)) {
    errs.push(
      `a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '${DNS1123_LABEL}')`,
    );
  }
  return errs;
}

/** Validates a DNS-1035 label (service names: must start with a letter). */
export function validateDns1035Label(name: string): string[] {
  const errs: string[] = [];
  if (name.length > 63) return ["must be no more than 63 characters"];
  if (!dns1035Re.test(name)) {
    errs.push(
      `a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '${DNS1035_LABEL}')`,
    );
  }
  return errs;
}

/** Validates a qualified name (`prefix/name` or `name`), as label keys are. */
export function validateQualifiedName(value: string): string[] {
  const errs: string[] = [];
  const parts = value.split("/");
  let name = value;
  if (parts.length > 2) {
    return [
      `a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '${QUALIFIED_NAME}') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')`,
    ];
  }
  if (parts.length === 2) {
    const prefix = parts[0] ?? "";
    name = parts[1] ?? "";
    if (prefix.length === 0) errs.push("prefix part must be non-empty");
    else errs.push(...validateDns1123Subdomain(prefix).map((m) => `prefix part ${m}`));
  }
  if (name.length === 0) errs.push("name part must be non-empty");
  else if (name.length > 63) return [...errs, "name part must be no more than 63 characters"];
  if (!qualifiedRe.test(name)) {
    errs.push(
      `name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '${QUALIFIED_NAME}')`,
    );
  }
  return errs;
}

const ALPHABET = "bcdfghjklmnpqrstvwxz2456789";

/**
 * `prefix` + 5 random characters from Kubernetes' alphabet (no vowels, no
 * look-alikes); the prefix is cut to 58 characters so the name fits 63.
 */
export function generateName(prefix: string): string {
  let s = "";
  for (let i = 0; i < 5; i++) s += ALPHABET[randomInt(ALPHABET.length)];
  return `${prefix.slice(0, 58)}${s}`;
}
