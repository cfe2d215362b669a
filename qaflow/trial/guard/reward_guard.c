/* reward_guard: runs test.sh under ptrace and records which processes wrote the reward files.
 *
 * Usage: reward_guard GUARD_DIR VDIR -- COMMAND ARGS...
 *
 * The command (bash test.sh) and every process it starts are traced (fork, vfork, clone followed).
 * A seccomp filter stops them only at the calls that can put bytes into a file by name: open, openat,
 * openat2, creat (with a write flag), rename(at2), link(at), truncate. After such a call succeeds, the
 * file it reached (the opened descriptor's path, the rename's or link's resolved target) is compared
 * with VDIR/reward.txt, VDIR/reward.json, VDIR itself and VDIR's ancestors. A write there is recorded
 * with the writer's pid, command line and whether it was still attached to the command: its parent
 * chain up to the command intact (a process whose parent died is detached, and so are its
 * descendants). A detached writer is what a loop left behind by the verifier's children is. A detached
 * process that holds a reward file writable (a descriptor opened before it was detached, a shared
 * writable mapping) counts as a writer too: it can write without opening anything. It is looked for
 * when a process becomes detached, when a detached process forks, and before the last kill.
 *
 * The moment the command exits, every other traced process is killed (SIGKILL: none is resumed
 * first), so nothing writes after the command; only then is the report written, to a new file
 * GUARD_DIR/report (whatever is there is removed first). Its first line is the key the harness put in
 * GUARD_DIR/key, which the guard reads and removes before the command starts: a report the traced
 * processes forged (then killing the guard, which kills them all) cannot carry it.
 * io_uring and 32-bit calls (writes the filter could not see), ptrace and process_vm_writev (a way
 * into another process) fail with ENOSYS / EPERM. The guard is not dumpable, so the traced
 * processes cannot attach to it or read its environment. Exit status: the command's (128+signal
 * when a signal ended it); 125 when the guard itself failed (stderr says why).
 *
 * Report lines: "key <key>", then "write <ok|detached> <pid> <path>\t<command line>" once per writer, path
 * and verdict, then "killed <n>", then "end".
 *
 * Observe mode (a file GUARD_DIR/observe, removed before the command starts): the filter also stops at
 * execve(at), the stat and access family, unlink(at), mkdir(at) and write(1, ...), and GUARD_DIR/trace
 * gets one tab-separated line per event (fields percent-encoded): "proc PID PPID", "exec PID RESULT
 * PATH ARGV" (ARGV words joined by %1F; a failed lookup along PATH is an exec with -ENOENT), "open PID
 * RESULT FLAGS PATH", "stat PID RESULT PATH", "unlink|mkdir PID RESULT PATH", "rename PID RESULT FROM
 * TO", "out PID HEX" (what the process wrote to its stdout, cut per process) and "exit PID STATUS".
 * RESULT is 0 (or a descriptor) or -errno; a process's repeated open/stat lines of one path, flags and outcome
 * are written once.
 * x86_64 only. Built static by qaflow.trial.guard (any image can run it).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_TASKS 4096
#define MAX_WRITES 256
#define X32_BIT 0x40000000

#define MAX_ARGV 2048
#define OUT_PER_PROC 16384
#define OUT_TOTAL (1 << 20)
#define SEEN_SLOTS 262144

enum pending { NONE, OPEN_CALL, TARGET_CALL, EXEC_CALL, PATH_CALL, RENAME_CALL };

struct task {          /* one traced thread (tid) */
    int used;
    pid_t tid, tgid;
    enum pending pending;
    int watched;       /* observe mode: the pending call's path was read at its entry */
    long nr;
    char target[PATH_MAX];
    char source[PATH_MAX];
    char argv[MAX_ARGV];
};

struct proc {          /* one traced process (tgid) */
    int used, detached, checked;
    pid_t tgid, parent;
    size_t out;
};

static int observing;
static FILE *trace_lines;
static char *trace_buf;
static size_t trace_len, out_total;
static unsigned long long seen_keys[SEEN_SLOTS];

static struct task tasks[MAX_TASKS];
static struct proc procs[MAX_TASKS];
static char vdir[PATH_MAX];
static FILE *report_lines;
static char *report_buf;
static size_t report_len;
static pid_t root;
static int writes;

static void die(const char *what) {
    fprintf(stderr, "reward_guard: %s: %s\n", what, strerror(errno));
    exit(125);
}

static struct task *task_find(pid_t tid) {
    for (int i = 0; i < MAX_TASKS; i++)
        if (tasks[i].used && tasks[i].tid == tid) return &tasks[i];
    return NULL;
}

static struct task *task_add(pid_t tid, pid_t tgid) {
    struct task *t = task_find(tid);
    for (int i = 0; !t && i < MAX_TASKS; i++)
        if (!tasks[i].used) t = &tasks[i];
    if (!t) { errno = EAGAIN; die("too many traced threads"); }
    if (!t->used) {
        memset(t, 0, sizeof *t);
        t->used = 1;
        t->tid = tid;
    }
    t->tgid = tgid;
    return t;
}

static struct proc *proc_find(pid_t tgid) {
    for (int i = 0; i < MAX_TASKS; i++)
        if (procs[i].used && procs[i].tgid == tgid) return &procs[i];
    return NULL;
}

static void proc_add(pid_t tgid, pid_t parent) {
    if (proc_find(tgid)) return;
    for (int i = 0; i < MAX_TASKS; i++)
        if (!procs[i].used) {
            procs[i] = (struct proc){.used = 1, .tgid = tgid, .parent = parent};
            if (observing) fprintf(trace_lines, "proc\t%d\t%d\n", tgid, parent);
            return;
        }
    errno = EAGAIN;
    die("too many traced processes");
}

static void proc_gone(pid_t tgid) {
    for (int i = 0; i < MAX_TASKS; i++) {
        struct proc *p = &procs[i];
        if (!p->used) continue;
        if (p->tgid == tgid) p->used = 0;
        else if (p->parent == tgid) p->detached = 1; /* orphaned: no longer the command's */
    }
}

static int attached(pid_t tgid) {
    for (int depth = 0; depth < MAX_TASKS; depth++) {
        if (tgid == root) return 1;
        struct proc *p = proc_find(tgid);
        if (!p || p->detached) return 0;
        tgid = p->parent;
    }
    return 0;
}

static pid_t ppid_of(pid_t pid) {
    char path[64], line[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    ssize_t n = fd < 0 ? -1 : read(fd, line, sizeof line - 1);
    if (fd >= 0) close(fd);
    if (n <= 0) return 0;
    line[n] = '\0';
    char *end = strrchr(line, ')');
    char state;
    int ppid = 0;
    if (!end || sscanf(end + 1, " %c %d", &state, &ppid) != 2) return 0;
    return ppid;
}

static pid_t tgid_of(pid_t tid) {
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", tid);
    FILE *f = fopen(path, "r");
    pid_t tgid = tid;
    if (!f) return tid;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "Tgid: %d", &tgid) == 1) break;
    fclose(f);
    return tgid;
}

static void cmdline_of(pid_t pid, char *out, size_t size) {
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/cmdline", pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    ssize_t n = fd < 0 ? -1 : read(fd, out, size - 1);
    if (fd >= 0) close(fd);
    if (n <= 0) { snprintf(out, size, "?"); return; }
    for (ssize_t i = 0; i < n; i++)
        if (out[i] == '\0') out[i] = ' ';
        else if ((unsigned char)out[i] < 32 || out[i] == 127) out[i] = '?';
    while (n > 0 && out[n - 1] == ' ') n--;
    out[n] = '\0';
}

/* `len` bytes at `addr` in `tid` into `out`; returns how many were read (0 or less: none). process_vm_readv, or word
   by word through ptrace where a seccomp profile refuses it (docker's default, without CAP_SYS_PTRACE). */
static ssize_t read_mem(pid_t tid, unsigned long addr, void *out, size_t len) {
    struct iovec local = {out, len}, remote = {(void *)addr, len};
    ssize_t n = process_vm_readv(tid, &local, 1, &remote, 1, 0);
    if (n > 0) return n;
    size_t i = 0;
    for (; i < len; i += sizeof(long)) {
        errno = 0;
        long word = ptrace(PTRACE_PEEKDATA, tid, (void *)(addr + i), NULL);
        if (errno) break;
        memcpy((char *)out + i, &word, len - i < sizeof word ? len - i : sizeof word);
    }
    return (ssize_t)(i < len ? i : len);
}

static int read_string(pid_t tid, unsigned long addr, char *out, size_t size) {
    struct iovec local = {out, size - 1}, remote = {(void *)addr, size - 1};
    ssize_t n = process_vm_readv(tid, &local, 1, &remote, 1, 0);
    if (n <= 0) {  /* the string may end near a page boundary: read byte-wise words instead */
        size_t i = 0;
        for (; i + sizeof(long) < size; i += sizeof(long)) {
            errno = 0;
            long word = ptrace(PTRACE_PEEKDATA, tid, (void *)(addr + i), NULL);
            if (errno) break;
            memcpy(out + i, &word, sizeof word);
            if (memchr(&word, 0, sizeof word)) return 0;
        }
        out[i] = '\0';
        return i ? 0 : -1;
    }
    out[n] = '\0';
    return 0;
}

static int resolve(pid_t tid, long dirfd, const char *path, char *out);

/* A trace field: bytes outside printable ASCII, '%' and whitespace percent-encoded. */
static void put_field(const char *text, size_t n) {
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)text[i];
        if (c <= 32 || c >= 127 || c == '%') fprintf(trace_lines, "%%%02X", c);
        else fputc(c, trace_lines);
    }
}

/* 1 the first time a process makes the call (op, outcome, flags, path); 0 after (a full table writes
 * everything). Successes count as one outcome whatever descriptor they returned. */
static int first_time(const char *op, pid_t pid, long result, long flags, const char *path) {
    unsigned long long h = 1469598103934665603ULL;
    for (const char *p = op; *p; p++) h = (h ^ (unsigned char)*p) * 1099511628211ULL;
    h = (h ^ (unsigned long long)(result < 0 ? result : 0)) * 1099511628211ULL;
    h = (h ^ (unsigned long long)flags) * 1099511628211ULL;
    h = (h ^ (unsigned long long)pid) * 1099511628211ULL;
    for (const char *p = path; *p; p++) h = (h ^ (unsigned char)*p) * 1099511628211ULL;
    if (!h) h = 1;
    for (size_t i = 0; i < 64; i++) {
        size_t slot = (size_t)((h + i) % SEEN_SLOTS);
        if (seen_keys[slot] == h) return 0;
        if (!seen_keys[slot]) { seen_keys[slot] = h; return 1; }
    }
    return 1;
}

static void trace_path(const char *op, pid_t pid, long result, long flags, const char *path) {
    if (!observing || !first_time(op, pid, result, flags, path)) return;
    fprintf(trace_lines, "%s\t%d\t%ld\t", op, pid, result);
    if (flags >= 0) fprintf(trace_lines, "%ld\t", flags);
    put_field(path, strlen(path));
    fputc('\n', trace_lines);
}

/* `path` for `tid` as an absolute path even when a folder on the way does not exist (then lexical). */
static void absolute(pid_t tid, long dirfd, const char *path, char *out) {
    if (resolve(tid, dirfd, path, out) == 0) return;
    char link[64], base[PATH_MAX];
    ssize_t n = -1;
    if (path[0] != '/') {
        if ((int)dirfd == AT_FDCWD) snprintf(link, sizeof link, "/proc/%d/cwd", tid);
        else snprintf(link, sizeof link, "/proc/%d/fd/%d", tid, (int)dirfd);
        n = readlink(link, base, sizeof base - 1);
    }
    if (n > 0) { base[n] = '\0'; snprintf(out, PATH_MAX, "%s/%s", base, path); }
    else snprintf(out, PATH_MAX, "%s", path);
}

/* The words of an argv array at `addr` in `tid`, joined by 0x1F into `out`. */
static void read_argv(pid_t tid, unsigned long addr, char *out, size_t size) {
    size_t len = 0;
    out[0] = '\0';
    for (int i = 0; addr && i < 64; i++) {
        unsigned long ptr = 0;
        if (read_mem(tid, addr + i * sizeof ptr, &ptr, sizeof ptr) != sizeof ptr || !ptr) break;
        char word[512];
        if (read_string(tid, ptr, word, sizeof word) < 0) break;
        int n = snprintf(out + len, size - len, "%s%s", i ? "\x1f" : "", word);
        if (n < 0 || (size_t)n >= size - len) break;
        len += (size_t)n;
    }
}

static void trace_exec(pid_t pid, long result, const char *path, const char *argv) {
    if (!observing) return;
    fprintf(trace_lines, "exec\t%d\t%ld\t", pid, result);
    put_field(path, strlen(path));
    fputc('\t', trace_lines);
    put_field(argv, strlen(argv));
    fputc('\n', trace_lines);
}

/* What `tgid` writes to its stdout (fd 1: `out`) and stderr (fd 2: `err`), cut at OUT_PER_PROC bytes per
   process for both together. */
static void trace_out(pid_t tid, pid_t tgid, unsigned long fd, unsigned long buf, unsigned long count) {
    struct proc *p = proc_find(tgid);
    if (!p || p->out >= OUT_PER_PROC || out_total >= OUT_TOTAL) return;
    size_t want = count < OUT_PER_PROC - p->out ? count : OUT_PER_PROC - p->out;
    char data[OUT_PER_PROC];
    ssize_t n = read_mem(tid, buf, data, want);
    if (n <= 0) return;
    p->out += (size_t)n;
    out_total += (size_t)n;
    fprintf(trace_lines, "%s\t%d\t", fd == 2 ? "err" : "out", tgid);
    for (ssize_t i = 0; i < n; i++) fprintf(trace_lines, "%02x", (unsigned char)data[i]);
    fputc('\n', trace_lines);
}

static int under_vdir(const char *path) {
    size_t n = strlen(vdir);
    if (strncmp(path, vdir, n) == 0 && (path[n] == '\0' || path[n] == '/')) {
        const char *name = path[n] ? path + n + 1 : "";
        return path[n] == '\0' || strcmp(name, "reward.txt") == 0 || strcmp(name, "reward.json") == 0;
    }
    size_t m = strlen(path); /* an ancestor of VDIR replaced: the whole folder swapped */
    return m < n && strncmp(vdir, path, m) == 0 && (vdir[m] == '/' || m == 1);
}

/* The path `path` (relative to `dirfd`) names for the process `tid`, its last component unresolved. */
static int resolve(pid_t tid, long dirfd, const char *path, char *out) {
    char link[64], base[PATH_MAX], full[2 * PATH_MAX + 2], dir[PATH_MAX];
    if (path[0] == '/') snprintf(link, sizeof link, "/proc/%d/root", tid);
    else if ((int)dirfd == AT_FDCWD) snprintf(link, sizeof link, "/proc/%d/cwd", tid);
    else snprintf(link, sizeof link, "/proc/%d/fd/%d", tid, (int)dirfd);
    ssize_t n = readlink(link, base, sizeof base - 1);
    if (n < 0) return -1;
    base[n] = '\0';
    snprintf(full, sizeof full, "%s/%s", strcmp(base, "/") == 0 ? "" : base, path);
    size_t len = strlen(full);
    while (len > 1 && full[len - 1] == '/') full[--len] = '\0';
    char *slash = strrchr(full, '/');
    const char *last = slash + 1;
    *slash = '\0';
    if (!realpath(full[0] ? full : "/", dir)) return -1;
    if (snprintf(out, PATH_MAX, "%s/%s", strcmp(dir, "/") == 0 ? "" : dir, last) >= PATH_MAX) return -1;
    if (strcmp(last, "..") == 0 || strcmp(last, ".") == 0 || last[0] == '\0') {
        if (!realpath(out[0] ? out : "/", dir)) return -1;
        snprintf(out, PATH_MAX, "%s", dir);
    }
    return 0;
}

static struct { pid_t tgid; int ok; char path[PATH_MAX]; } seen[MAX_WRITES];

static void record(pid_t tid, const char *path) {
    char cmd[512];
    struct task *t = task_find(tid);
    pid_t tgid = t ? t->tgid : tid;
    int ok = attached(tgid);
    for (int i = 0; i < writes; i++)
        if (seen[i].tgid == tgid && seen[i].ok == ok && strcmp(seen[i].path, path) == 0) return;
    if (writes >= MAX_WRITES) {
        if (ok) return;
        writes = MAX_WRITES - 1;  /* a full table keeps its last slot for detached writers */
    }
    seen[writes].tgid = tgid;
    seen[writes].ok = ok;
    snprintf(seen[writes].path, PATH_MAX, "%s", path);
    writes++;
    cmdline_of(tid, cmd, sizeof cmd);
    fprintf(report_lines, "write %s %d %s\t%s\n", ok ? "ok" : "detached", tgid, path, cmd);
}

/* A reward file `pid` can still write without opening it: a writable descriptor or a shared writable mapping. */
static int holds_reward(pid_t pid, char *path, size_t size) {
    char dir[64], link[PATH_MAX], line[PATH_MAX + 128];
    snprintf(dir, sizeof dir, "/proc/%d/fd", pid);
    DIR *fds = opendir(dir);
    struct dirent *entry;
    while (fds && (entry = readdir(fds))) {
        if (entry->d_name[0] == '.') continue;
        snprintf(line, sizeof line, "%s/%s", dir, entry->d_name);
        ssize_t n = readlink(line, link, sizeof link - 1);
        if (n <= 0) continue;
        link[n] = '\0';
        if (!under_vdir(link) || strcmp(link, vdir) == 0) continue;
        snprintf(line, sizeof line, "/proc/%d/fdinfo/%s", pid, entry->d_name);
        FILE *info = fopen(line, "r");
        unsigned flags = 0;
        while (info && fgets(line, sizeof line, info))
            if (sscanf(line, "flags: %o", &flags) == 1) break;
        if (info) fclose(info);
        if (flags & (O_WRONLY | O_RDWR)) {
            closedir(fds);
            snprintf(path, size, "%s", link);
            return 1;
        }
    }
    if (fds) closedir(fds);
    snprintf(dir, sizeof dir, "/proc/%d/maps", pid);
    FILE *maps = fopen(dir, "r");
    while (maps && fgets(line, sizeof line, maps)) {
        char perms[8], *file = strchr(line, '/');
        if (!file || sscanf(line, "%*s %7s", perms) != 1 || perms[1] != 'w' || perms[3] != 's') continue;
        file[strcspn(file, "\n")] = '\0';
        if (under_vdir(file) && strcmp(file, vdir) != 0) {
            fclose(maps);
            snprintf(path, size, "%s", file);
            return 1;
        }
    }
    if (maps) fclose(maps);
    return 0;
}

/* Detached processes holding a reward file writable: they can write it unseen, so they count as writers.
 * `all`: look again at those already looked at (the last look, before they are killed). */
static void check_holders(int all) {
    char path[PATH_MAX];
    for (int i = 0; i < MAX_TASKS; i++) {
        struct proc *p = &procs[i];
        if (!p->used || p->tgid == root || (p->checked && !all) || attached(p->tgid)) continue;
        p->checked = 1;
        if (holds_reward(p->tgid, path, sizeof path)) record(p->tgid, path);
    }
}

/* Observe mode, at a call's entry: what it names, kept for its exit. 1 when the exit is wanted. */
static int observe_entry(pid_t tid, struct task *t, long nr, unsigned long *a) {
    char path[PATH_MAX];
    long dirfd = AT_FDCWD;
    unsigned long name = 0;
    switch (nr) {
    case SYS_write:
        if (a[0] == 1 || a[0] == 2) trace_out(tid, t->tgid, a[0], a[1], a[2]);
        return 0;
    case SYS_execve: name = a[0]; read_argv(tid, a[1], t->argv, sizeof t->argv); break;
    case SYS_execveat: dirfd = (long)(int)a[0]; name = a[1]; read_argv(tid, a[2], t->argv, sizeof t->argv); break;
    case SYS_open: case SYS_creat: case SYS_stat: case SYS_lstat: case SYS_access: case SYS_unlink:
    case SYS_mkdir: case SYS_rename:
        name = a[0]; break;
    case SYS_openat: case SYS_openat2: case SYS_newfstatat: case SYS_statx: case SYS_faccessat:
    case SYS_faccessat2: case SYS_unlinkat: case SYS_mkdirat: case SYS_renameat: case SYS_renameat2:
        dirfd = (long)(int)a[0]; name = a[1]; break;
    default: return 0;
    }
    if (read_string(tid, name, path, sizeof path) < 0 || !path[0]) return 0;
    absolute(tid, dirfd, path, t->source);
    return 1;
}

static void observe_exit(pid_t tid, struct task *t, long ret, struct user_regs_struct *r) {
    long nr = t->nr;
    switch (nr) {
    case SYS_execve: case SYS_execveat:
        if (ret < 0) trace_exec(t->tgid, ret, t->source, t->argv);
        return;
    case SYS_open: case SYS_openat: case SYS_openat2: case SYS_creat: {
        long flags = nr == SYS_creat ? (O_WRONLY | O_CREAT | O_TRUNC) : nr == SYS_open ? (long)r->rsi
                     : nr == SYS_openat ? (long)r->rdx : 0;
        char link[64], path[PATH_MAX];
        snprintf(link, sizeof link, "/proc/%d/fd/%ld", tid, ret);
        ssize_t n = ret >= 0 ? readlink(link, path, sizeof path - 1) : -1;
        if (n > 0) path[n] = '\0';
        trace_path("open", t->tgid, ret, flags & 0xffffff, n > 0 ? path : t->source);
        return;
    }
    case SYS_unlink: case SYS_unlinkat: trace_path("unlink", t->tgid, ret, -1, t->source); return;
    case SYS_mkdir: case SYS_mkdirat: trace_path("mkdir", t->tgid, ret, -1, t->source); return;
    case SYS_rename: case SYS_renameat: case SYS_renameat2:
        fprintf(trace_lines, "rename\t%d\t%ld\t", t->tgid, ret);
        put_field(t->source, strlen(t->source));
        fputc('\t', trace_lines);
        put_field(t->target, strlen(t->target));
        fputc('\n', trace_lines);
        return;
    default: trace_path("stat", t->tgid, ret, -1, t->source); return;
    }
}

static void on_seccomp(pid_t tid) {
    struct user_regs_struct r;
    struct task *t = task_find(tid);
    if (!t || ptrace(PTRACE_GETREGS, tid, NULL, &r) < 0) return;
    long nr = (long)r.orig_rax;
    unsigned long a[5] = {r.rdi, r.rsi, r.rdx, r.r10, r.r8};
    char path[PATH_MAX];
    long dirfd = AT_FDCWD;
    unsigned long target = 0;
    t->pending = NONE;
    t->nr = nr;
    int watch = t->watched = observing && observe_entry(tid, t, nr, a);
    switch (nr) {
    case SYS_open: case SYS_openat: case SYS_creat: case SYS_openat2:
        t->pending = OPEN_CALL;
        return;
    case SYS_execve: case SYS_execveat:
        if (watch) t->pending = EXEC_CALL;
        return;
    case SYS_rename: case SYS_link: target = a[1]; break;
    case SYS_renameat: case SYS_renameat2: case SYS_linkat: dirfd = (long)(int)a[2]; target = a[3]; break;
    case SYS_truncate: target = a[0]; break;
    default:
        if (watch) t->pending = PATH_CALL;
        return;
    }
    if (read_string(tid, target, path, sizeof path) < 0) return;
    if (resolve(tid, dirfd, path, t->target) < 0) absolute(tid, dirfd, path, t->target);
    if (nr == SYS_truncate) {  /* truncate follows links: where it lands */
        char real[PATH_MAX];
        if (realpath(t->target, real)) snprintf(t->target, PATH_MAX, "%s", real);
    }
    if (under_vdir(t->target)) t->pending = TARGET_CALL;
    else if (watch && (nr == SYS_rename || nr == SYS_renameat || nr == SYS_renameat2)) t->pending = RENAME_CALL;
}

static int write_flags(pid_t tid, struct user_regs_struct *r) {
    long nr = (long)r->orig_rax;
    unsigned long flags;
    if (nr == SYS_creat) return 1;
    if (nr == SYS_open) flags = r->rsi;
    else if (nr == SYS_openat) flags = r->rdx;
    else {  /* openat2: struct open_how, flags first */
        if (read_mem(tid, r->rdx, &flags, sizeof flags) != sizeof flags) return 1;
    }
    return (flags & (O_WRONLY | O_RDWR | O_TRUNC | O_CREAT)) != 0;
}

static void on_syscall_exit(pid_t tid) {
    struct task *t = task_find(tid);
    struct user_regs_struct r;
    if (!t) return;
    enum pending what = t->pending;
    t->pending = NONE;
    if (what == NONE || ptrace(PTRACE_GETREGS, tid, NULL, &r) < 0) return;
    long ret = (long)r.rax;
    if (t->watched) observe_exit(tid, t, ret, &r);
    if (ret < 0 || what == EXEC_CALL || what == PATH_CALL || what == RENAME_CALL) return;
    if (what == TARGET_CALL) { record(tid, t->target); return; }
    if (!write_flags(tid, &r)) return;
    char link[64], path[PATH_MAX];
    snprintf(link, sizeof link, "/proc/%d/fd/%ld", tid, ret);
    ssize_t n = readlink(link, path, sizeof path - 1);
    if (n < 0) return;
    path[n] = '\0';
    if (under_vdir(path)) record(tid, path);
}

static const long guarded[] = {SYS_open, SYS_openat, SYS_openat2, SYS_creat, SYS_rename, SYS_renameat,
                               SYS_renameat2, SYS_link, SYS_linkat, SYS_truncate};
static const long observed[] = {SYS_execve, SYS_execveat, SYS_stat, SYS_lstat, SYS_newfstatat, SYS_statx,
                                SYS_access, SYS_faccessat, SYS_faccessat2, SYS_unlink, SYS_unlinkat,
                                SYS_mkdir, SYS_mkdirat};

static void install_filter(void) {
    struct sock_filter f[64];
    size_t n = 0;
    struct sock_filter head[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, X32_BIT, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_io_uring_setup, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_ptrace, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_process_vm_writev, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
    };
    for (size_t i = 0; i < sizeof head / sizeof head[0]; i++) f[n++] = head[i];
    size_t count = sizeof guarded / sizeof guarded[0];
    size_t extra = observing ? sizeof observed / sizeof observed[0] : 0;
    for (size_t i = 0; i < count + extra; i++) {  /* each: jump to the TRACE return at the end */
        long nr = i < count ? guarded[i] : observed[i - count];
        size_t jump = (count + extra - 1 - i) + (observing ? 5 : 1);
        f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)nr, (unsigned char)jump, 0);
    }
    if (observing) {  /* write(1, ...) and write(2, ...): the process's stdout and stderr */
        f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_write, 0, 3);
        f[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0]));
        f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 1, 2, 0);
        f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 2, 1, 0);
    }
    f[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
    f[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRACE);
    struct sock_fprog prog = {(unsigned short)n, f};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) die("no_new_privs");
    if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) < 0) die("seccomp");
}

/* The command exited: kill every other traced process without resuming any, and reap them. */
static int kill_the_rest(void) {
    int killed = 0, status;
    check_holders(1);
    for (int i = 0; i < MAX_TASKS; i++)
        if (procs[i].used && procs[i].tgid != root) {
            kill(procs[i].tgid, SIGKILL);
            killed++;
        }
    for (int i = 0; i < MAX_TASKS; i++)
        if (tasks[i].used) syscall(SYS_tgkill, tasks[i].tgid, tasks[i].tid, SIGKILL);
    alarm(10);
    for (;;) {
        pid_t pid = waitpid(-1, &status, __WALL);
        if (pid < 0) break;
        if (WIFSTOPPED(status)) {  /* a child forked just now: it dies too, unresumed */
            if (!task_find(pid) && !proc_find(pid) && tgid_of(pid) == pid) killed++;
            task_add(pid, pid);
            kill(pid, SIGKILL);
            ptrace(PTRACE_CONT, pid, NULL, NULL);
        }
    }
    return killed;
}

static void write_trace(const char *dir) {
    char where[PATH_MAX];
    snprintf(where, sizeof where, "%s/trace", dir);
    fflush(trace_lines);
    if (unlink(where) < 0 && errno != ENOENT) die("cannot remove an old trace");
    int fd = open(where, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0) die("cannot create the trace");
    for (size_t off = 0; off < trace_len;) {
        ssize_t n = write(fd, trace_buf + off, trace_len - off);
        if (n <= 0) die("cannot write the trace");
        off += (size_t)n;
    }
    close(fd);
}

static void write_report(const char *dir, const char *key, int killed) {
    char where[PATH_MAX];
    snprintf(where, sizeof where, "%s/report", dir);
    fprintf(report_lines, "killed %d\nend\n", killed);
    fflush(report_lines);
    if (unlink(where) < 0 && errno != ENOENT) die("cannot remove an old report");
    int fd = open(where, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0) die("cannot create the report");
    dprintf(fd, "key %s\n", key);
    for (size_t off = 0; off < report_len;) {
        ssize_t n = write(fd, report_buf + off, report_len - off);
        if (n <= 0) die("cannot write the report");
        off += (size_t)n;
    }
    close(fd);
}

/* The harness's key from DIR/key, removed before any traced process exists. */
static void read_key(const char *dir, char *key, size_t size) {
    char where[PATH_MAX];
    snprintf(where, sizeof where, "%s/key", dir);
    int fd = open(where, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) die("cannot open the key");
    ssize_t n = read(fd, key, size - 1);
    close(fd);
    if (n <= 0) { errno = EINVAL; die("empty key"); }
    key[n] = '\0';
    key[strcspn(key, " \t\r\n")] = '\0';
    if (unlink(where) < 0) die("cannot remove the key");
}

int main(int argc, char **argv) {
    if (argc < 5 || strcmp(argv[3], "--") != 0) {
        fprintf(stderr, "usage: reward_guard GUARD_DIR VDIR -- COMMAND...\n");
        return 125;
    }
    const char *dir = argv[1];
    char key[128];
    read_key(dir, key, sizeof key);
    if (!realpath(argv[2], vdir)) die("the verifier's log folder");
    report_lines = open_memstream(&report_buf, &report_len);
    char flag[PATH_MAX];
    snprintf(flag, sizeof flag, "%s/observe", dir);
    if (unlink(flag) == 0) {
        observing = 1;
        trace_lines = open_memstream(&trace_buf, &trace_len);
    }
    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    signal(SIGPIPE, SIG_IGN);

    root = fork();
    if (root < 0) die("fork");
    if (root == 0) {
        prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
        if (ptrace(PTRACE_TRACEME, 0, NULL, NULL) < 0) die("ptrace (is it allowed in this sandbox?)");
        raise(SIGSTOP);
        install_filter();
        execvp(argv[4], argv + 4);
        die(argv[4]);
    }
    int status;
    if (waitpid(root, &status, __WALL) < 0 || !WIFSTOPPED(status)) die("the command did not start");
    long opts = PTRACE_O_TRACEFORK | PTRACE_O_TRACEVFORK | PTRACE_O_TRACECLONE | PTRACE_O_TRACESECCOMP |
                PTRACE_O_TRACESYSGOOD | PTRACE_O_EXITKILL | PTRACE_O_TRACEEXEC;
    if (ptrace(PTRACE_SETOPTIONS, root, NULL, (void *)opts) < 0) die("ptrace options");
    task_add(root, root);
    proc_add(root, 0);
    ptrace(PTRACE_CONT, root, NULL, NULL);

    int exit_code = 125;
    for (;;) {
        pid_t tid = waitpid(-1, &status, __WALL);
        if (tid < 0) { if (errno == EINTR) continue; break; }
        if (WIFEXITED(status) || WIFSIGNALED(status)) {
            struct task *t = task_find(tid);
            pid_t tgid = t ? t->tgid : tid;
            if (t) t->used = 0;
            if (tid == tgid) {
                if (observing)
                    fprintf(trace_lines, "exit\t%d\t%d\n", tgid,
                            WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
                proc_gone(tgid);
                check_holders(0);
            }
            if (tid == root) {
                exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
                break;
            }
            continue;
        }
        if (!WIFSTOPPED(status)) continue;
        int sig = WSTOPSIG(status), event = status >> 16, inject = 0;
        struct task *t = task_find(tid);
        if (!t) {  /* a new child's first stop (it may come before its parent's fork event) */
            t = task_add(tid, tgid_of(tid));
            if (t->tgid == tid) proc_add(tid, ppid_of(tid));
            if (sig == SIGSTOP) { ptrace(PTRACE_CONT, tid, NULL, NULL); continue; }
        }
        if (sig == (SIGTRAP | 0x80)) {
            on_syscall_exit(tid);
        } else if (sig == SIGTRAP && event == PTRACE_EVENT_SECCOMP) {
            on_seccomp(tid);
            if (t->pending != NONE) { ptrace(PTRACE_SYSCALL, tid, NULL, NULL); continue; }
        } else if (sig == SIGTRAP && (event == PTRACE_EVENT_FORK || event == PTRACE_EVENT_VFORK ||
                                      event == PTRACE_EVENT_CLONE)) {
            unsigned long child;
            ptrace(PTRACE_GETEVENTMSG, tid, NULL, &child);
            pid_t ctgid = tgid_of((pid_t)child);
            task_add((pid_t)child, ctgid);
            if (ctgid != t->tgid) {
                proc_add(ctgid, t->tgid);
                check_holders(0);
            }
        } else if (sig == SIGTRAP && event == PTRACE_EVENT_EXEC) {
            if (observing && (t->pending == EXEC_CALL)) {
                char link[64], exe[PATH_MAX];
                snprintf(link, sizeof link, "/proc/%d/exe", tid);
                ssize_t n = readlink(link, exe, sizeof exe - 1);
                exe[n > 0 ? n : 0] = '\0';
                trace_exec(t->tgid, 0, n > 0 ? exe : t->source, t->argv);
            }
            t->pending = NONE;
        } else if (event == 0) {
            siginfo_t info;  /* no siginfo: a group-stop, resumed as is; else a signal to deliver */
            inject = ptrace(PTRACE_GETSIGINFO, tid, NULL, &info) < 0 ? 0 : sig;
        }
        ptrace(PTRACE_CONT, tid, NULL, (void *)(long)inject);
    }
    int killed = kill_the_rest();
    if (observing) write_trace(dir);
    write_report(dir, key, killed);
    return exit_code;
}
