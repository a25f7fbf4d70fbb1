// Writes a protobufjs JSON descriptor of the given protos (paths relative to
// proto/), used at run time to walk messages field by field.
import { writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import protobuf from "protobufjs";

const [out, ...files] = process.argv.slice(2);
const here = path.dirname(fileURLToPath(import.meta.url));
const root = new protobuf.Root();
root.resolvePath = (_origin, target) => path.join(here, target);
root.loadSync(files, { keepCase: false });
root.resolveAll();
writeFileSync(out, JSON.stringify(root.toJSON({ keepComments: false }), null, 1) + "\n");
