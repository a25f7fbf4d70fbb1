// The local images choreo builds on the machine itself, without a registry:
// a busybox root filesystem in the image store (the process runtime's rootfs)
// imported into Docker as LOCAL_IMAGES.busybox. Idempotent, and fast when
// everything is present (two stats and one `docker image inspect`).
import { spawn } from "node:child_process";
import Docker from "dockerode";
import { existsSync } from "node:fs";
import { chmod, mkdir, mkdtemp, open, rename, rm, symlink, writeFile, copyFile } from "node:fs/promises";
import path from "node:path";
import type { Logger } from "@choreo/kit/log";
import { run } from "../exec.js";
import { LOCAL_IMAGES, imageRootfs } from "./types.js";

/** Debian's busybox-static installs here; `busybox` (dynamic) installs the same path. */
export const HOST_BUSYBOX = "/bin/busybox";

export interface EnsureLocalImagesOptions {
  /** The image store (DEFAULT_IMAGES_DIR in production). */
  imagesDir: string;
  /**
   * Import the root filesystem into the Docker engine too: true for the
   * default engine (DOCKER_HOST or /var/run/docker.sock), or a client.
   * Talks to the engine's API: no docker CLI is needed (node agents in
   * containers have only the socket).
   */
  docker: boolean | Docker;
  log: Pick<Logger, "info">;
  /** The image name; LOCAL_IMAGES.busybox unless a test asks for its own tag. */
  image?: string;
  /** A statically linked busybox; HOST_BUSYBOX by default. */
  busybox?: string;
}

export interface EnsureLocalImagesResult {
  rootfs: string;
  /** The root filesystem was built by this call. */
  built: boolean;
  /** The image was imported into Docker by this call. */
  imported: boolean;
}

/** The root directories of the busybox rootfs (tmp gets 1777 below). */
const ROOT_DIRS = ["bin", "etc", "tmp", "proc", "sys", "dev", "root", "www", "var/run"];
const PASSWD = "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n";
const GROUP = "root:x:0:\nnogroup:x:65534:\n";

/**
 * Makes sure the busybox image exists: its root filesystem under
 * `imageRootfs(imagesDir, image)` and, with `docker`, the Docker image
 * (`docker import`, `CMD ["/bin/sh"]`, `PATH=/bin`). Safe to call from
 * several processes at once: the rootfs is built aside and renamed into place.
 */
export async function ensureLocalImages(opts: EnsureLocalImagesOptions): Promise<EnsureLocalImagesResult> {
  const image = opts.image ?? LOCAL_IMAGES.busybox;
  const rootfs = imageRootfs(opts.imagesDir, image);
  let built = false;
  if (!existsSync(path.join(rootfs, "bin", "busybox"))) {
    built = await buildBusyboxRootfs(rootfs, opts.busybox ?? HOST_BUSYBOX);
    if (built) opts.log.info({ image, rootfs }, "built the busybox root filesystem");
  }
  let imported = false;
  const docker = opts.docker === true ? new Docker() : opts.docker || undefined;
  if (docker && !(await dockerHasImage(image, docker))) {
    await dockerImport(docker, rootfs, image);
    imported = true;
    opts.log.info({ image }, "imported the busybox image into docker");
  }
  return { rootfs, built, imported };
}

/** Builds the rootfs next to `rootfs` and renames it into place; false when another process won the race. */
async function buildBusyboxRootfs(rootfs: string, busybox: string): Promise<boolean> {
  if (!existsSync(busybox)) throw new Error(`${busybox} is missing: install Debian's busybox-static (scripts/ensure-deps.sh does)`);
  if (!(await isStatic(busybox))) throw new Error(`${busybox} is dynamically linked: install Debian's busybox-static (it replaces busybox)`);
  const imageDir = path.dirname(rootfs);
  await mkdir(imageDir, { recursive: true });
  const tmp = await mkdtemp(path.join(imageDir, ".rootfs.tmp-"));
  try {
    for (const d of ROOT_DIRS) await mkdir(path.join(tmp, d), { recursive: true });
    await chmod(path.join(tmp, "tmp"), 0o1777);
    await copyFile(busybox, path.join(tmp, "bin", "busybox"));
    await chmod(path.join(tmp, "bin", "busybox"), 0o755);
    const stdout = await run(busybox, ["--list"]);
    for (const applet of stdout.split("\n").map((l) => l.trim())) {
      if (!applet || applet === "busybox" || applet.includes("/")) continue;
      // Relative: the link must resolve inside a container and inside a chroot alike.
      await symlink("busybox", path.join(tmp, "bin", applet));
    }
    await writeFile(path.join(tmp, "etc", "passwd"), PASSWD);
    await writeFile(path.join(tmp, "etc", "group"), GROUP);
    try {
      await rename(tmp, rootfs);
    } catch (err) {
      // Another process renamed its copy first: keep that one.
      const code = (err as NodeJS.ErrnoException).code;
      if ((code === "ENOTEMPTY" || code === "EEXIST") && existsSync(path.join(rootfs, "bin", "busybox"))) return false;
      throw err;
    }
    return true;
  } finally {
    await rm(tmp, { recursive: true, force: true });
  }
}

/** An ELF file without a PT_INTERP program header is statically linked. */
export async function isStatic(file: string): Promise<boolean> {
  const fh = await open(file, "r");
  try {
    const head = Buffer.alloc(64);
    await fh.read(head, 0, 64, 0);
    if (head.readUInt32BE(0) !== 0x7f454c46) throw new Error(`${file} is not an ELF executable`);
    const is64 = head[4] === 2;
    const le = head[5] === 1;
    const u16 = (b: Buffer, o: number): number => (le ? b.readUInt16LE(o) : b.readUInt16BE(o));
    const u32 = (b: Buffer, o: number): number => (le ? b.readUInt32LE(o) : b.readUInt32BE(o));
    const phoff = is64 ? Number(le ? head.readBigUInt64LE(0x20) : head.readBigUInt64BE(0x20)) : u32(head, 0x1c);
    const phentsize = u16(head, is64 ? 0x36 : 0x2a);
    const phnum = u16(head, is64 ? 0x38 : 0x2c);
    const table = Buffer.alloc(phentsize * phnum);
    await fh.read(table, 0, table.length, phoff);
    for (let i = 0; i < phnum; i++) if (u32(table, i * phentsize) === 3 /* PT_INTERP */) return false;
    return true;
  } finally {
    await fh.close();
  }
}

export async function dockerHasImage(image: string, docker: Docker = new Docker()): Promise<boolean> {
  try {
    await docker.getImage(image).inspect();
    return true;
  } catch (err) {
    if ((err as { statusCode?: number }).statusCode === 404) return false;
    throw err;
  }
}

/** What `tar -C rootfs -c . | docker import -c 'CMD ["/bin/sh"]' -c 'ENV PATH=/bin' - image` does, over the API. */
async function dockerImport(docker: Docker, rootfs: string, image: string): Promise<void> {
  const tar = spawn("tar", ["--numeric-owner", "-C", rootfs, "-c", "."], { stdio: ["ignore", "pipe", "pipe"] });
  let tarErr = "";
  tar.stderr.on("data", (d: Buffer) => (tarErr += d.toString()));
  const tarDone = new Promise<void>((resolve, reject) => {
    tar.on("error", reject);
    tar.on("exit", (code) => (code === 0 ? resolve() : reject(new Error(`tar exited ${code}: ${tarErr.trim()}`))));
  });
  const colon = image.lastIndexOf(":");
  const [repo, tag] = colon > image.lastIndexOf("/") ? [image.slice(0, colon), image.slice(colon + 1)] : [image, "latest"];
  const progress = await docker.importImage(tar.stdout, { repo, tag, changes: ['CMD ["/bin/sh"]', "ENV PATH=/bin"] });
  const imported = new Promise<void>((resolve, reject) => {
    docker.modem.followProgress(progress, (err: Error | null, out: Array<{ error?: string }>) => {
      const failed = err ?? out.find((o) => o.error);
      if (failed) reject(failed instanceof Error ? failed : new Error(`docker import ${image}: ${failed.error}`));
      else resolve();
    });
  });
  await Promise.all([tarDone, imported]);
}
