import path from "node:path";

/**
 * The small images choreo builds on the machine itself (no registry is
 * needed): a busybox root filesystem from Debian's static busybox. Docker
 * gets it through `docker import`; the process runtime reads the same
 * root filesystem from its image store.
 *
 * Debian's static busybox 1.35 has two traps: `wget -T N` segfaults once
 * connected (leave the timeout out), and a URL without a port may crash on
 * the service-name lookup (write `wget http://web:80/`).
 */
export const LOCAL_IMAGES = {
  /** sh, httpd, wget, nc, sleep, … — the examples' web app and test pods. */
  busybox: "local/busybox:1.35",
  /** The sandbox holding a docker pod's namespaces (busybox `sleep`, run with docker's init). */
  pause: "local/busybox:1.35",
} as const;

/** Where the process runtime finds images' root filesystems (`CHOREO_IMAGES_DIR`). */
export const DEFAULT_IMAGES_DIR = "/var/lib/choreo/images";

/** The root filesystem of `image` in the store: `<dir>/<name with / and : as _>/rootfs`. */
export function imageRootfs(imagesDir: string, image: string): string {
  const ref = image.includes(":") || image.includes("@") ? image : `${image}:latest`;
  return path.join(imagesDir, ref.replace(/[/:@]/g, "_"), "rootfs");
}
