/*
 * choreo-exec: the last step of a process-runtime container, and of every
 * exec into one. It exists so that no user string (env names and values,
 * command, args, working dir, hostname) is ever parsed as an option by a host
 * program, and so that the container's processes are not host root:
 *
 *   choreo-exec start ROOTFS SPECFILE
 *       (PID 1's child, in the container's private mount namespace, with
 *       the run's fstab mounted on ROOTFS) makes a minimal /dev, masks
 *       /proc paths, pivot_root's into ROOTFS and detaches the host's root,
 *       then confines itself and execs the spec's argv with the spec's env.
 *   choreo-exec join PID SPECFILE -- COMMAND...
 *       enters the namespaces of container process PID (their root is the
 *       pivoted one), forks into its pid namespace, confines the child the
 *       same way and execs COMMAND with the spec's env; exits with its status.
 *   choreo-exec join --tty PID SPECFILE -- COMMAND...
 *       the same with a terminal: COMMAND's stdin, stdout and stderr are a
 *       pty (its controlling terminal, in a session of its own); choreo-exec
 *       relays its own stdin to the pty and the pty to its stdout, and sets
 *       the window size from lines "COLS ROWS\n" read on fd 3 (when open).
 *   choreo-exec hostname
 *       sets the hostname of the current UTS namespace to stdin, verbatim.
 *
 * SPECFILE holds NUL-terminated strings: optionally the security line
 * (below), the working dir, the env entries (NAME=VALUE), an empty string,
 * then the argv. Read from a file, so the values never pass through a
 * command line or a shell.
 *
 * The security line (the container's securityContext, worked out by the
 * node agent; a spec without it gets the defaults: root, KEEP_CAPS):
 *   "choreo-sec 1 UID GID CAPS AMBIENT FLAGS NGROUPS G1 G2 ..."
 * CAPS and AMBIENT are hex capability masks: CAPS the bounding, permitted
 * and effective sets of root (a non-root process keeps only AMBIENT, the
 * capabilities its securityContext adds, as ambient ones); FLAGS: 1
 * privileged (the host's /dev, no masked /proc paths, no seccomp filter),
 * 2 read-only root, 4 no seccomp filter (seccompProfile Unconfined).
 *
 * "Confined" is Docker's default for a container without privileges: the
 * capability sets cut to KEEP_CAPS, no_new_privs, and a seccomp filter
 * denying what Docker's default profile denies to a container without
 * CAP_SYS_ADMIN (a deny list here, Docker's is an allow list).
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <grp.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <signal.h>
#include <sched.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#ifndef __x86_64__
#error "choreo-exec's seccomp filter is written for x86_64"
#endif

/* Setup failures: 126 as a shell's "cannot execute"; a command not found: 127. */
static void die(int code, const char *fmt, ...) {
  int err = errno;
  va_list ap;
  va_start(ap, fmt);
  fputs("choreo-exec: ", stderr);
  vfprintf(stderr, fmt, ap);
  if (err) fprintf(stderr, ": %s", strerror(err));
  fputc('\n', stderr);
  va_end(ap);
  exit(code);
}

/* Docker's default capabilities minus NET_RAW (choreo drops it from pods) and MKNOD (no device cgroup). */
static const int KEEP_CAPS[] = {
  CAP_CHOWN, CAP_DAC_OVERRIDE, CAP_FOWNER, CAP_FSETID, CAP_KILL, CAP_SETGID, CAP_SETUID, CAP_SETPCAP,
  CAP_NET_BIND_SERVICE, CAP_SYS_CHROOT, CAP_AUDIT_WRITE, CAP_SETFCAP,
};

static unsigned long long default_caps(void) {
  unsigned long long keep = 0;
  for (size_t i = 0; i < sizeof KEEP_CAPS / sizeof KEEP_CAPS[0]; i++) keep |= 1ULL << KEEP_CAPS[i];
  return keep;
}

/* ---- the spec file ------------------------------------------------------ */

#define SEC_PRIVILEGED 1
#define SEC_READONLY_ROOT 2
#define SEC_UNCONFINED 4
#define MAX_GROUPS 256

/* The identity and confinement of the process (the security line, or the defaults). */
struct sec {
  uid_t uid;
  gid_t gid;
  int set_identity; /* from a security line: setgroups, setresgid, setresuid (also to 0) */
  size_t ngroups;
  gid_t groups[MAX_GROUPS];
  unsigned long long caps, ambient;
  unsigned flags;
};

struct spec {
  struct sec sec;
  char *workdir;
  char **env;
  char **argv;
};

/* One number of the security line: digits in `base` then a space or the end; dies on anything else. */
static unsigned long long sec_number(char **p, int base, unsigned long long max) {
  errno = 0;
  char *end;
  if (!(base == 16 ? isxdigit((unsigned char)**p) : isdigit((unsigned char)**p))) { errno = 0; die(126, "bad security line"); }
  unsigned long long v = strtoull(*p, &end, base);
  if (errno || v > max || (*end != ' ' && *end != '\0')) { errno = 0; die(126, "bad security line"); }
  *p = *end ? end + 1 : end;
  return v;
}

static void parse_sec(char *line, struct sec *s) {
  char *p = line + strlen("choreo-sec ");
  if (sec_number(&p, 10, 1) != 1) { errno = 0; die(126, "unknown security line version"); }
  s->uid = (uid_t)sec_number(&p, 10, 0x7fffffff);
  s->gid = (gid_t)sec_number(&p, 10, 0x7fffffff);
  s->caps = sec_number(&p, 16, ~0ULL);
  s->ambient = sec_number(&p, 16, ~0ULL) & s->caps;
  s->flags = (unsigned)sec_number(&p, 10, 7);
  s->ngroups = (size_t)sec_number(&p, 10, MAX_GROUPS);
  for (size_t i = 0; i < s->ngroups; i++) s->groups[i] = (gid_t)sec_number(&p, 10, 0x7fffffff);
  if (*p) { errno = 0; die(126, "bad security line"); }
  s->set_identity = 1;
}

static void read_spec(const char *file, struct spec *s) {
  int fd = open(file, O_RDONLY | O_CLOEXEC);
  if (fd < 0) die(126, "open %s", file);
  struct stat st;
  if (fstat(fd, &st) < 0) die(126, "stat %s", file);
  char *buf = malloc((size_t)st.st_size + 1);
  size_t got = 0;
  while (buf && got < (size_t)st.st_size) {
    ssize_t n = read(fd, buf + got, (size_t)st.st_size - got);
    if (n <= 0) die(126, "read %s", file);
    got += (size_t)n;
  }
  close(fd);
  if (!buf || got == 0 || buf[got - 1] != '\0') { errno = 0; die(126, "%s: not a spec file", file); }
  /* Every string is a pointer into buf; the arrays are NULL-terminated as execve wants. */
  size_t count = 0;
  for (size_t i = 0; i < got; i++) count += buf[i] == '\0';
  char **all = calloc(count + 2, sizeof(char *));
  if (!all) die(126, "calloc");
  size_t k = 0;
  for (size_t i = 0; i < got; i += strlen(buf + i) + 1) all[k++] = buf + i;
  memset(&s->sec, 0, sizeof s->sec);
  s->sec.caps = default_caps();
  if (strncmp(all[0], "choreo-sec ", strlen("choreo-sec ")) == 0) {
    parse_sec(all[0], &s->sec);
    all++;
    if (--count == 0) { errno = 0; die(126, "%s: no working dir after the security line", file); }
  }
  s->workdir = all[0];
  s->env = all + 1;
  size_t sep = 1;
  while (sep < count && all[sep][0] != '\0') sep++;
  all[sep] = NULL; /* ends env */
  s->argv = all + sep + 1;
}

/* ---- the root: /dev, masked /proc, pivot_root --------------------------- */

static char *at(const char *root, const char *p) {
  static char buf[4096];
  if ((size_t)snprintf(buf, sizeof buf, "%s%s", root, p) >= sizeof buf) { errno = ENAMETOOLONG; die(126, "%s", p); }
  return buf;
}

/*
 * A tmpfs /dev with only the harmless devices (Docker's set), a private
 * devpts, /dev/shm and the stdio links: the host's /dev (disks, /dev/mem,
 * /dev/kmsg) is not in the container. Nodes are made here (the tmpfs is the
 * only mount of the root without nodev) and cannot be made by the container
 * (CAP_MKNOD is not kept: there is no device cgroup to stop its use).
 */
static void make_dev(const char *root) {
  static const struct { const char *name; unsigned major, minor; } nodes[] = {
    {"null", 1, 3}, {"zero", 1, 5}, {"full", 1, 7}, {"random", 1, 8}, {"urandom", 1, 9}, {"tty", 5, 0},
  };
  static const char *links[][2] = {
    {"/proc/self/fd", "fd"}, {"/proc/self/fd/0", "stdin"}, {"/proc/self/fd/1", "stdout"}, {"/proc/self/fd/2", "stderr"}, {"pts/ptmx", "ptmx"},
  };
  const char *dev = at(root, "/dev");
  if (mount("tmpfs", dev, "tmpfs", MS_NOSUID | MS_STRICTATIME, "mode=755,size=65536k") < 0) die(126, "mount %s", dev);
  /* Relative names from here: no path lengths to check. */
  if (chdir(dev) < 0) die(126, "chdir %s", dev);
  for (size_t i = 0; i < sizeof nodes / sizeof nodes[0]; i++)
    if (mknod(nodes[i].name, S_IFCHR | 0666, makedev(nodes[i].major, nodes[i].minor)) < 0) die(126, "mknod /dev/%s", nodes[i].name);
  for (size_t i = 0; i < sizeof links / sizeof links[0]; i++)
    if (symlink(links[i][0], links[i][1]) < 0) die(126, "symlink /dev/%s", links[i][1]);
  if (mkdir("pts", 0755) < 0 || mount("devpts", "pts", "devpts", MS_NOSUID | MS_NOEXEC, "newinstance,ptmxmode=0666,mode=0620,gid=5") < 0) die(126, "/dev/pts");
  if (mkdir("shm", 01777) < 0 || mount("shm", "shm", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=1777,size=65536k") < 0) die(126, "/dev/shm");
}

/* Docker's masked and read-only paths (runc's defaults); /sys is not mounted in our containers at all. */
static void mask_proc(const char *root) {
  static const char *masked[] = {
    "/proc/asound", "/proc/acpi", "/proc/kcore", "/proc/keys", "/proc/latency_stats", "/proc/timer_list",
    "/proc/timer_stats", "/proc/sched_debug", "/proc/scsi",
  };
  static const char *readonly[] = {"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"};
  char null[4096];
  snprintf(null, sizeof null, "%s", at(root, "/dev/null"));
  struct stat st;
  for (size_t i = 0; i < sizeof masked / sizeof masked[0]; i++) {
    const char *p = at(root, masked[i]);
    if (stat(p, &st) < 0) continue; /* this kernel has no such file */
    int r = S_ISDIR(st.st_mode) ? mount("tmpfs", p, "tmpfs", MS_RDONLY, "size=0") : mount(null, p, NULL, MS_BIND, NULL);
    if (r < 0) die(126, "mask %s", p);
  }
  for (size_t i = 0; i < sizeof readonly / sizeof readonly[0]; i++) {
    const char *p = at(root, readonly[i]);
    if (stat(p, &st) < 0) continue;
    if (mount(p, p, NULL, MS_BIND | MS_REC, NULL) < 0 ||
        mount(p, p, NULL, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0) die(126, "read-only %s", p);
  }
}

/*
 * pivot_root, not chroot: a chroot leaves the host's root one `..` (or one
 * /proc/N/root) away for whoever has CAP_SYS_CHROOT. pivot_root(".", ".")
 * stacks the old root on the new one; detaching it leaves no path to it.
 * (pivot_root also moves PID 1, the init shell, into the new root.)
 */
static void pivot(const char *root) {
  if (chdir(root) < 0) die(126, "chdir %s", root);
  if (syscall(SYS_pivot_root, ".", ".") < 0) die(126, "pivot_root %s", root);
  /* Private already (unshare --propagation private); slave again so nothing of the unmount can reach the host. */
  if (mount(NULL, ".", NULL, MS_SLAVE | MS_REC, NULL) < 0) die(126, "make the old root a slave");
  if (umount2(".", MNT_DETACH) < 0) die(126, "detach the old root");
  if (chdir("/") < 0) die(126, "chdir /");
}

/*
 * readOnlyRootFilesystem: the root mount (overlay or the host-filesystem
 * tmpfs) read-only for this mount namespace, its other flags kept; /dev,
 * /proc, /tmp on the host's filesystem and the volumes are mounts of their own.
 */
static void readonly_root(void) {
  struct statvfs st;
  if (statvfs("/", &st) < 0) die(126, "statvfs /");
  unsigned long keep = 0;
  if (st.f_flag & ST_NOSUID) keep |= MS_NOSUID;
  if (st.f_flag & ST_NODEV) keep |= MS_NODEV;
  if (st.f_flag & ST_NOEXEC) keep |= MS_NOEXEC;
  if (mount(NULL, "/", NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | keep, NULL) < 0) die(126, "remount / read-only");
}

/* ---- confinement: identity, capabilities, no_new_privs, seccomp --------- */

/*
 * Still host root with every capability here. In order: the bounding set
 * cut to s->caps (needs CAP_SETPCAP, which we still have), then the
 * identity (setgroups, setresgid, setresuid: CAP_SETGID and CAP_SETUID are
 * still ours whatever the container keeps; KEEPCAPS so that the permitted
 * set survives the uid change), then permitted = effective = s->caps,
 * inheritable empty save the ambient ones, which a non-root process raises:
 * its execve leaves it exactly those (a root process gets the bounding set).
 */
static void drop_caps(const struct sec *s) {
  struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
  struct __user_cap_data_struct now[2];
  if (syscall(SYS_capget, &h, now) < 0) die(126, "capget");
  /* What we do not have (the agent's own bounding set, in a container or under systemd) cannot be kept (capset would refuse). */
  unsigned long long keep = s->caps & (now[0].permitted | (unsigned long long)now[1].permitted << 32);
  /* EINVAL past the kernel's last capability: what it does not know is not kept (capset would refuse it). */
  for (int c = 0; c < 64; c++) {
    if (prctl(PR_CAPBSET_READ, c, 0, 0, 0) < 0) {
      if (errno != EINVAL) die(126, "read capability %d of the bounding set", c);
      keep &= c == 0 ? 0 : (~0ULL >> (64 - c));
      break;
    }
    if (keep & (1ULL << c)) continue;
    if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0) die(126, "drop capability %d from the bounding set", c);
  }
  unsigned long long ambient = s->uid != 0 ? s->ambient & keep : 0;
  if (s->set_identity) {
    if (setgroups(s->ngroups, s->groups) < 0) die(126, "setgroups");
    if (setresgid(s->gid, s->gid, s->gid) < 0) die(126, "setresgid %u", (unsigned)s->gid);
    if (prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) < 0) die(126, "keep capabilities");
    if (setresuid(s->uid, s->uid, s->uid) < 0) die(126, "setresuid %u", (unsigned)s->uid);
    if (prctl(PR_SET_KEEPCAPS, 0, 0, 0, 0) < 0) die(126, "keep capabilities off");
  }
  if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL) die(126, "clear ambient capabilities");
  /* Inheritable empty but for the ambient ones, as Docker since 20.10.14 (CVE-2022-24769). */
  struct __user_cap_data_struct d[2] = {
    {(unsigned)keep, (unsigned)keep, (unsigned)ambient},
    {(unsigned)(keep >> 32), (unsigned)(keep >> 32), (unsigned)(ambient >> 32)},
  };
  if (syscall(SYS_capset, &h, d) < 0) die(126, "capset");
  for (int c = 0; c < 64; c++)
    if ((ambient & (1ULL << c)) && prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, c, 0, 0) < 0) die(126, "raise ambient capability %d", c);
}

#define LD_NR BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr))
/* The low 32 bits of args[0] (x86_64 is little-endian): clone's flags, personality's persona. */
#define LD_ARG0 BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0]))
#define RET(v) BPF_STMT(BPF_RET | BPF_K, (v))

/* What Docker's default profile does not allow a container without CAP_SYS_ADMIN (and friends). */
static const unsigned DENIED[] = {
  __NR_acct, __NR_add_key, __NR_bpf, __NR_clock_adjtime, __NR_clock_settime, __NR_create_module, __NR_delete_module,
  __NR_finit_module, __NR_get_kernel_syms, __NR_get_mempolicy, __NR_init_module, __NR_ioperm, __NR_iopl, __NR_kcmp,
  __NR_kexec_file_load, __NR_kexec_load, __NR_keyctl, __NR_lookup_dcookie, __NR_mbind, __NR_mount, __NR_move_mount,
  __NR_open_tree, __NR_fsopen, __NR_fsconfig, __NR_fsmount, __NR_fspick, __NR_mount_setattr, __NR_move_pages,
  __NR_name_to_handle_at, __NR_nfsservctl, __NR_open_by_handle_at, __NR_perf_event_open, __NR_pivot_root,
  __NR_process_vm_readv, __NR_process_vm_writev, __NR_process_madvise, __NR_pidfd_getfd, __NR_ptrace,
  __NR_query_module, __NR_quotactl, __NR_quotactl_fd, __NR_reboot, __NR_request_key, __NR_set_mempolicy, __NR_setns,
  __NR_settimeofday, __NR_adjtimex, __NR_swapon, __NR_swapoff, __NR_sysfs, __NR__sysctl, __NR_syslog, __NR_umount2,
  __NR_unshare, __NR_uselib, __NR_userfaultfd, __NR_ustat, __NR_vhangup, __NR_sethostname, __NR_setdomainname,
  __NR_fanotify_init, __NR_io_uring_setup, __NR_io_uring_enter, __NR_io_uring_register,
};
/* Docker allows personality() only with these personas (Linux, and the flags `setarch`/`uname -m` queries use). */
static const unsigned PERSONAS[] = {0x0, 0x8, 0x20000, 0x20008, 0xffffffff};
#define CLONE_NS_FLAGS (CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWCGROUP)

static void install_seccomp(void) {
  enum { N = sizeof DENIED / sizeof DENIED[0], NP = sizeof PERSONAS / sizeof PERSONAS[0] };
  /* Layout (BPF jumps only forward): checks, deny list, ALLOW, clone block, personality block, EPERM, ALLOW, ENOSYS. */
  enum { LIST = 8, A = LIST + N, CLONE = A + 1, PERS = CLONE + 2, EPERM_AT = PERS + 1 + NP, ALLOW_AT = EPERM_AT + 1, ENOSYS_AT = ALLOW_AT + 1 };
  struct sock_filter f[ENOSYS_AT + 1];
  unsigned i = 0;
#define TO(t) ((unsigned char)((t) - (i + 1)))
  f[i] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)); i++;
  f[i] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0); i++;
  f[i] = (struct sock_filter)RET(SECCOMP_RET_KILL_PROCESS); i++; /* i386 or another ABI: no way around the filter */
  f[i] = (struct sock_filter)LD_NR; i++;
  f[i] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000, TO(EPERM_AT), 0); i++; /* x32 */
  f[i] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_clone, TO(CLONE), 0); i++;
  f[i] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_clone3, TO(ENOSYS_AT), 0); i++; /* its flags are in memory: libc falls back to clone */
  f[i] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_personality, TO(PERS), 0); i++;
  for (unsigned k = 0; k < N; k++, i++) f[i] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, DENIED[k], TO(EPERM_AT), 0);
  f[i] = (struct sock_filter)RET(SECCOMP_RET_ALLOW); i++;
  f[i] = (struct sock_filter)LD_ARG0; i++;
  f[i] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, CLONE_NS_FLAGS, TO(EPERM_AT), TO(ALLOW_AT)); i++;
  f[i] = (struct sock_filter)LD_ARG0; i++;
  for (unsigned k = 0; k < NP; k++, i++) f[i] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, PERSONAS[k], TO(ALLOW_AT), 0);
  f[i] = (struct sock_filter)RET(SECCOMP_RET_ERRNO | EPERM); i++;
  f[i] = (struct sock_filter)RET(SECCOMP_RET_ALLOW); i++;
  f[i] = (struct sock_filter)RET(SECCOMP_RET_ERRNO | ENOSYS); i++;
#undef TO
  struct sock_fprog prog = {(unsigned short)i, f};
  if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &prog) != 0) die(126, "seccomp");
}

static void confine(const struct sec *s) {
  drop_caps(s);
  /* Required for a filter without CAP_SYS_ADMIN, and setuid files no longer gain anything (always: allowPrivilegeEscalation is not granted). */
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) die(126, "no_new_privs");
  if (!(s->flags & (SEC_PRIVILEGED | SEC_UNCONFINED))) install_seccomp();
}

/* ---- exec ---------------------------------------------------------------- */

/* execvpe with the container's own PATH (runc's lookup), in the container's root. */
static void exec_command(char **argv, char **env) {
  if (!argv[0]) { errno = 0; die(126, "no command"); }
  /* Nothing of the host may stay open past execve (fds 0-2 are the log pipes). */
  if (syscall(SYS_close_range, 3U, ~0U, 4U /* CLOSE_RANGE_CLOEXEC */) < 0)
    for (int fd = 3; fd < 1024; fd++) fcntl(fd, F_SETFD, FD_CLOEXEC);
  if (strchr(argv[0], '/')) {
    execve(argv[0], argv, env);
    die(errno == ENOENT ? 127 : 126, "exec %s", argv[0]);
  }
  const char *path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
  for (char **e = env; *e; e++) if (strncmp(*e, "PATH=", 5) == 0) path = *e + 5;
  int err = ENOENT;
  char full[4096];
  for (const char *p = path;; ) {
    const char *end = strchrnul(p, ':');
    int len = (int)(end - p);
    if (snprintf(full, sizeof full, "%.*s%s%s", len, p, len ? "/" : "", argv[0]) < (int)sizeof full) {
      execve(full, argv, env);
      if (errno == EACCES) err = EACCES; /* as execvp: a later match may still run */
    }
    if (!*end) break;
    p = end + 1;
  }
  errno = err;
  die(err == ENOENT ? 127 : 126, "exec %s", argv[0]);
}

static int start(const char *root, const char *specfile) {
  struct spec s;
  read_spec(specfile, &s);
  mode_t old = umask(0); /* the modes above are meant as written */
  if (s.sec.flags & SEC_PRIVILEGED) {
    /* privileged: the host's devices, and /proc unmasked (as runc). */
    const char *dev = at(root, "/dev");
    if (mount("/dev", dev, NULL, MS_BIND | MS_REC, NULL) < 0) die(126, "bind the host's /dev on %s", dev);
  } else {
    make_dev(root);
    mask_proc(root);
  }
  umask(old);
  pivot(root);
  if (s.sec.flags & SEC_READONLY_ROOT) readonly_root();
  if (chdir(s.workdir) < 0) die(126, "chdir %s", s.workdir);
  confine(&s.sec);
  exec_command(s.argv, s.env);
  return 126;
}

/* ---- a terminal for join --tty --------------------------------------------- */

/*
 * The pty is the host's (/dev/ptmx opened before entering the container's
 * mount namespace, so nothing of the container's /dev is trusted or needed):
 * the command holds the slave by fd, which is all a terminal takes (its
 * /dev/tty is the 5,0 node of the minimal /dev, which opens the controlling
 * terminal whatever its path).
 */
struct tty {
  int master, slave;
};

static void open_tty(struct tty *t) {
  t->master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (t->master < 0) die(126, "open a pty");
  if (grantpt(t->master) < 0 || unlockpt(t->master) < 0) die(126, "unlock the pty");
  /* The slave by its master (Linux 4.13), no path lookup; its name otherwise. */
  t->slave = ioctl(t->master, TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (t->slave < 0) {
    const char *name = ptsname(t->master);
    if (!name || (t->slave = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC)) < 0) die(126, "open the pty's slave");
  }
}

/* In the child, before confinement: a session of its own with the pty as its controlling terminal on 0, 1 and 2. */
static void take_tty(struct tty *t) {
  if (setsid() < 0) die(126, "setsid");
  if (ioctl(t->slave, TIOCSCTTY, 0) < 0) die(126, "make the pty the controlling terminal");
  for (int fd = 0; fd < 3; fd++) if (dup2(t->slave, fd) < 0) die(126, "dup2 the pty");
  close(t->slave);
  close(t->master);
  /* choreo-exec killed (the agent kills its process group, which the command left with setsid): the command goes too. */
  if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0) die(126, "parent death signal");
}

/* Writes all of buf (the agent's stdout pipe: blocking, its back-pressure is the relay's). */
static int write_all(int fd, const char *buf, size_t n) {
  while (n > 0) {
    ssize_t w = write(fd, buf, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    buf += w;
    n -= (size_t)w;
  }
  return 0;
}

/* Applies each complete "COLS ROWS\n" line of sizes; keeps a partial last line. Returns the bytes kept. */
static size_t apply_sizes(int master, char *buf, size_t len) {
  size_t start = 0;
  for (size_t i = 0; i < len; i++) {
    if (buf[i] != '\n') continue;
    buf[i] = '\0';
    unsigned cols, rows;
    if (sscanf(buf + start, "%u %u", &cols, &rows) == 2 && cols <= 0xffff && rows <= 0xffff) {
      struct winsize ws = {.ws_row = (unsigned short)rows, .ws_col = (unsigned short)cols};
      ioctl(master, TIOCSWINSZ, &ws); /* SIGWINCH to the terminal's foreground group */
    }
    start = i + 1;
  }
  if (start == len) return 0;
  if (start == 0 && len == 64) return 0; /* a line too long to be a size: dropped */
  memmove(buf, buf + start, len - start);
  return len - start;
}

/*
 * The parent's side: our stdin → the master (buffered, non-blocking, so a
 * command not reading its input never stops its output), the master → our
 * stdout, fd 3 → window sizes; until the child exited and the master has
 * nothing more (EIO once no process holds the slave; a short quiet spell when
 * something the command left in the background still does). Returns the
 * child's wait status.
 */
static int relay(pid_t child, int master, int sizes) {
  int pidfd = (int)syscall(SYS_pidfd_open, child, 0);
  if (pidfd < 0) die(126, "pidfd_open");
  if (fcntl(master, F_SETFL, fcntl(master, F_GETFL) | O_NONBLOCK) < 0) die(126, "non-blocking pty");
  int in_open = 1, sizes_open = sizes >= 0, exited = 0, status = 0;
  char in[4096], out[32768], sz[64];
  size_t in_len = 0, sz_len = 0;
  for (;;) {
    struct pollfd p[4] = {
      {in_open && !exited && in_len < sizeof in ? 0 : -1, POLLIN, 0},
      {master, POLLIN | (in_len && !exited ? POLLOUT : 0), 0},
      {sizes_open && !exited ? sizes : -1, POLLIN, 0},
      {exited ? -1 : pidfd, POLLIN, 0},
    };
    int n = poll(p, 4, exited ? 200 : -1);
    if (n < 0) {
      if (errno == EINTR) continue;
      die(126, "poll");
    }
    if (n == 0) break; /* exited, and the terminal stayed quiet */
    if (p[3].revents) {
      while (waitpid(child, &status, 0) < 0) if (errno != EINTR) die(126, "wait");
      exited = 1;
    }
    if (p[0].revents) {
      ssize_t r = read(0, in + in_len, sizeof in - in_len);
      if (r > 0) in_len += (size_t)r;
      else if (r == 0 || errno != EINTR) in_open = 0; /* stdin's end: the terminal stays, the command decides */
    }
    if (p[2].revents) {
      ssize_t r = read(sizes, sz + sz_len, sizeof sz - sz_len);
      if (r > 0) sz_len = apply_sizes(master, sz, sz_len + (size_t)r);
      else if (r == 0 || errno != EINTR) sizes_open = 0;
    }
    if (p[1].revents & POLLOUT) {
      ssize_t w = write(master, in, in_len);
      if (w > 0) {
        memmove(in, in + w, in_len - (size_t)w);
        in_len -= (size_t)w;
      }
    }
    if (p[1].revents & (POLLIN | POLLHUP | POLLERR)) {
      ssize_t r = read(master, out, sizeof out);
      if (r > 0) {
        if (write_all(1, out, (size_t)r) < 0) break; /* nobody reads us any more */
      } else if (r == 0 || (errno != EAGAIN && errno != EINTR)) {
        /* EIO: no process holds the slave any more */
        if (exited) break;
        while (waitpid(child, &status, 0) < 0) if (errno != EINTR) die(126, "wait");
        break;
      }
    }
  }
  return status;
}

/* tty: -1 for none, else the fd of the window sizes (-2 when there is none). */
static int join(const char *pidarg, const char *specfile, char **command, int tty) {
  /* The agent killed (kill -9 included): this exec goes with it, and the command below with us. */
  if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0) die(126, "parent death signal");
  if (getppid() == 1) die(126, "the node agent is gone");
  struct spec s;
  read_spec(specfile, &s);
  static const struct { const char *name; int type; } nss[] = {
    {"ipc", CLONE_NEWIPC}, {"uts", CLONE_NEWUTS}, {"net", CLONE_NEWNET}, {"pid", CLONE_NEWPID}, {"mnt", CLONE_NEWNS},
  };
  int fds[5];
  char p[64];
  /* All opened first: after the mount namespace, /proc is the container's and PID means another process. */
  for (int i = 0; i < 5; i++) {
    snprintf(p, sizeof p, "/proc/%s/ns/%s", pidarg, nss[i].name);
    if ((fds[i] = open(p, O_RDONLY | O_CLOEXEC)) < 0) die(126, "open %s", p);
  }
  /* The terminal too: the host's /dev/ptmx, before the container's root is ours. */
  struct tty t = {-1, -1};
  if (tty != -1) open_tty(&t);
  for (int i = 0; i < 5; i++) if (setns(fds[i], nss[i].type) < 0) die(126, "setns %s", nss[i].name);
  /* Entering the mount namespace set our root to its root: the container's, pivoted. */
  pid_t child = fork();
  if (child < 0) die(126, "fork");
  if (child == 0) {
    if (tty != -1) take_tty(&t);
    else if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0) die(126, "parent death signal");
    if (chdir(s.workdir) < 0) die(126, "chdir %s", s.workdir);
    confine(&s.sec);
    exec_command(command, s.env);
  }
  int status;
  if (tty != -1) {
    close(t.slave);
    status = relay(child, t.master, tty);
  } else {
    while (waitpid(child, &status, 0) < 0) if (errno != EINTR) die(126, "wait");
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static int set_hostname(void) {
  char name[257];
  size_t got = 0;
  for (ssize_t n; got < sizeof name && (n = read(0, name + got, sizeof name - got)) != 0; got += (size_t)n)
    if (n < 0) die(1, "read the hostname");
  if (sethostname(name, got) < 0) die(1, "sethostname");
  return 0;
}

int main(int argc, char **argv) {
  errno = 0;
  if (argc == 4 && strcmp(argv[1], "start") == 0) return start(argv[2], argv[3]);
  if (argc >= 6 && strcmp(argv[1], "join") == 0 && strcmp(argv[4], "--") == 0) return join(argv[2], argv[3], argv + 5, -1);
  if (argc >= 7 && strcmp(argv[1], "join") == 0 && strcmp(argv[2], "--tty") == 0 && strcmp(argv[5], "--") == 0) {
    /* fd 3 checked before anything is opened (an fd opened later could take its number). */
    int sizes = fcntl(3, F_GETFD) >= 0 ? 3 : -2;
    /* Our own errors on the terminal's stream: a tty has no stderr of its own. */
    if (dup2(1, 2) < 0) return 126;
    return join(argv[3], argv[4], argv + 6, sizes);
  }
  if (argc == 2 && strcmp(argv[1], "hostname") == 0) return set_hostname();
  die(2, "usage: choreo-exec start ROOTFS SPECFILE | join [--tty] PID SPECFILE -- COMMAND... | hostname < NAME");
  return 2;
}
