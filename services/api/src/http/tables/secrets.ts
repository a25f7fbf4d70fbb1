// Secret columns, after kubectl's printSecret: TYPE, and DATA the number of keys of data (never their values).
import { since } from "./age.js";
import { rec, str } from "./json.js";
import { AGE_COLUMN, NAME_COLUMN, col, type KindTable } from "./types.js";

export const secretTable: KindTable = {
  columns: [
    NAME_COLUMN,
    col("Type", "Used to facilitate programmatic handling of secret data. More info: https://kubernetes.io/docs/concepts/configuration/secret/#secret-types"),
    col(
      "Data",
      "Data contains the secret data. Each key must consist of alphanumeric characters, '-', '_' or '.'. The serialized form of the secret data is a base64 encoded string, representing the arbitrary (possibly non-string) data value here. Described in https://tools.ietf.org/html/rfc4648#section-4",
    ),
    AGE_COLUMN,
  ],
  cells(s, now) {
    const meta = rec(s["metadata"]);
    return [str(meta["name"]), str(s["type"]), Object.keys(rec(s["data"])).length, since(meta["creationTimestamp"], now)];
  },
};
