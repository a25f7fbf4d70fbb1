// ConfigMap columns, after kubectl's printConfigMap: DATA counts the keys of data and binaryData.
import { since } from "./age.js";
import { rec, str } from "./json.js";
import { AGE_COLUMN, NAME_COLUMN, col, type KindTable } from "./types.js";

export const configMapTable: KindTable = {
  columns: [
    NAME_COLUMN,
    col(
      "Data",
      "Data contains the configuration data. Each key must consist of alphanumeric characters, '-', '_' or '.'. Values with non-UTF-8 byte sequences must use the BinaryData field. The keys stored in Data must not overlap with the keys in the BinaryData field, this is enforced during validation process.",
    ),
    AGE_COLUMN,
  ],
  cells(cm, now) {
    const meta = rec(cm["metadata"]);
    return [str(meta["name"]), Object.keys(rec(cm["data"])).length + Object.keys(rec(cm["binaryData"])).length, since(meta["creationTimestamp"], now)];
  },
};
