/* Differential conformance for files, pipes and processes: each line is a call, its result
 * (sign, or a value that is the same on every Linux) and errno name, for valid and invalid
 * arguments. The same static binary runs on Cadence and on Linux;
 * tests/fixtures/conform-files.linux-6.1.txt is Linux 6.1's output (on the peer:
 * ../shared/peer/run.sh --file target/user/conform-files 'cd /tmp && /conform-files'). It works
 * in the current directory, which must be writable and empty of its names. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sendfile.h>
#include <sys/sysmacros.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#define CONFORM_WIDTH "44"
#include "conform.h"

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    char buf[256];
    struct stat st;
    int fd = open("cf-a", O_CREAT | O_RDWR | O_EXCL, 0644);
    CALL("open O_CREAT|O_EXCL new", fd);
    CALL("open O_CREAT|O_EXCL existing", open("cf-a", O_CREAT | O_RDWR | O_EXCL, 0644));
    CALL("open missing", open("cf-none", O_RDONLY));
    CALL("open missing/x", open("cf-none/x", O_RDONLY));
    CALL("open file/x (ENOTDIR)", open("cf-a/x", O_RDONLY));
    CALL("open bad accmode", syscall(SYS_open, "cf-a", 3));
    CALL("open NULL path", syscall(SYS_open, NULL, O_RDONLY));
    CALL("open empty path", open("", O_RDONLY));
    CALL("open . O_WRONLY (EISDIR)", open(".", O_WRONLY));
    CALL("open file O_DIRECTORY", open("cf-a", O_RDONLY | O_DIRECTORY));
    VALUE("write 10", write(fd, "0123456789", 10));
    VALUE("lseek SEEK_CUR 0", lseek(fd, 0, SEEK_CUR));
    VALUE("lseek SEEK_SET 2", lseek(fd, 2, SEEK_SET));
    VALUE("read 4", read(fd, buf, 4));
    VALUE("lseek SEEK_END -1", lseek(fd, -1, SEEK_END));
    CALL("lseek negative", lseek(fd, -100, SEEK_SET));
    CALL("lseek bad whence", lseek(fd, 0, 7));
    VALUE("pwrite at 20 (hole)", pwrite(fd, "xy", 2, 20));
    VALUE("fstat size", (fstat(fd, &st), st.st_size));
    VALUE("pread at 12 (zeros)", pread(fd, buf, 8, 12));
    VALUE("pread byte 12", buf[0]);
    CALL("pread negative offset", pread(fd, buf, 1, -1));
    CALL("ftruncate 5", ftruncate(fd, 5));
    VALUE("size after ftruncate", (fstat(fd, &st), st.st_size));
    CALL("ftruncate negative", ftruncate(fd, -1));
    VALUE("S_ISREG", S_ISREG(st.st_mode));
    VALUE("mode & 0777", st.st_mode & 0777);
    int d = dup(fd);
    CALL("dup", d);
    VALUE("dup shares offset", (lseek(fd, 3, SEEK_SET), lseek(d, 0, SEEK_CUR)));
    CALL("dup2 to 50", dup2(fd, 50));
    CALL("dup2 same fd", dup2(fd, fd));
    CALL("dup2 bad old", dup2(99, 51));
    CALL("dup3 same fd", dup3(fd, fd, 0));
    CALL("dup3 bad flags", dup3(fd, 52, 1));
    VALUE("F_GETFD", fcntl(50, F_GETFD));
    CALL("F_SETFD cloexec", fcntl(50, F_SETFD, FD_CLOEXEC));
    VALUE("F_GETFD after", fcntl(50, F_GETFD));
    VALUE("F_DUPFD >= 60", fcntl(fd, F_DUPFD, 60));
    VALUE("F_GETFL accmode", fcntl(fd, F_GETFL) & O_ACCMODE);
    CALL("fcntl bad cmd", fcntl(fd, 9999));
    CALL("close 50", close(50));
    CALL("close 50 again", close(50));
    CALL("write to O_RDONLY fd", (close(d), d = open("cf-a", O_RDONLY), write(d, "x", 1)));
    CALL("read to O_WRONLY fd", (close(d), d = open("cf-a", O_WRONLY), read(d, buf, 1)));
    close(d);
    CALL("ioctl TCGETS on a file", ioctl(fd, 0x5401, buf));
    close(fd);
    CALL("mkdir cf-d", mkdir("cf-d", 0755));
    CALL("mkdir cf-d again", mkdir("cf-d", 0755));
    CALL("mkdir missing/x", mkdir("cf-none/x", 0755));
    CALL("rmdir file", rmdir("cf-a"));
    CALL("unlink dir", unlink("cf-d"));
    CALL("creat cf-d/f", (fd = creat("cf-d/f", 0600)));
    close(fd);
    CALL("rmdir non-empty", rmdir("cf-d"));
    CALL("rename file over dir", rename("cf-a", "cf-d"));
    CALL("rename dir into itself", rename("cf-d", "cf-d/sub"));
    CALL("rename cf-a cf-b", rename("cf-a", "cf-b"));
    CALL("stat cf-a after rename", stat("cf-a", &st));
    CALL("symlink cf-l -> cf-b", symlink("cf-b", "cf-l"));
    CALL("symlink existing", symlink("cf-b", "cf-l"));
    VALUE("readlink cf-l", readlink("cf-l", buf, sizeof buf));
    CALL("readlink file", readlink("cf-b", buf, sizeof buf));
    CALL("readlink size 0", readlink("cf-l", buf, 0));
    CALL("lstat link is link", (lstat("cf-l", &st), S_ISLNK(st.st_mode) ? 1 : -1));
    CALL("stat link is file", (stat("cf-l", &st), S_ISREG(st.st_mode) ? 1 : -1));
    CALL("symlink loop", (symlink("cf-loop", "cf-loop"), open("cf-loop", O_RDONLY)));
    CALL("open O_NOFOLLOW link", open("cf-l", O_RDONLY | O_NOFOLLOW));
    CALL("access cf-b R_OK", access("cf-b", R_OK));
    CALL("access cf-b X_OK", access("cf-b", X_OK));
    CALL("access missing", access("cf-none", F_OK));
    CALL("access bad mode", access("cf-b", 64));
    VALUE("umask 077 returns old", umask(077));
    VALUE("umask back", umask(022));
    CALL("chdir cf-d", chdir("cf-d"));
    CALL("chdir file", chdir("../cf-b"));
    CALL("getcwd size 1", getcwd(buf, 1) == NULL ? -1 : 1);
    CALL("getcwd ends /cf-d", getcwd(buf, sizeof buf) && strcmp(strrchr(buf, '/'), "/cf-d") == 0 ? 1 : -1);
    CALL("chdir ..", chdir(".."));
    DIR *dir = opendir("cf-d");
    int entries = 0;
    struct dirent *e;
    while (dir && (e = readdir(dir)))
        entries++;
    VALUE("readdir cf-d entries", entries);
    if (dir)
        closedir(dir);
    CALL("getdents64 on a file", (fd = open("cf-b", O_RDONLY), syscall(SYS_getdents64, fd, buf, sizeof buf)));
    close(fd);
    int p[2];
    CALL("pipe2", pipe2(p, O_CLOEXEC));
    CALL("pipe2 bad flags", pipe2(p + 0, 0x4));
    CALL("pipe2 NULL", syscall(SYS_pipe2, NULL, 0));
    VALUE("pipe write 5", write(p[1], "hello", 5));
    struct pollfd pf[2] = {{p[0], POLLIN, 0}, {p[1], POLLOUT, 0}};
    VALUE("poll ready count", poll(pf, 2, 0));
    VALUE("poll revents read", pf[0].revents);
    VALUE("poll revents write", pf[1].revents);
    VALUE("pipe read 5", read(p[0], buf, 10));
    CALL("lseek on pipe", lseek(p[0], 0, SEEK_SET));
    CALL("O_NONBLOCK read empty", (fcntl(p[0], F_SETFL, O_NONBLOCK), read(p[0], buf, 1)));
    close(p[1]);
    VALUE("read after writer closed", read(p[0], buf, 1));
    pf[0].revents = 0;
    VALUE("poll hup", (poll(pf, 1, 0), pf[0].revents));
    close(p[0]);
    signal(SIGPIPE, SIG_IGN);
    CALL("write with no reader", (pipe(p), close(p[0]), write(p[1], "x", 1)));
    close(p[1]);
    pid_t child = fork();
    if (child == 0)
        _exit(7);
    int status = 0;
    CALL("fork", child);
    CALL("waitpid child", waitpid(child, &status, 0) == child ? 1 : -1);
    VALUE("WEXITSTATUS", WEXITSTATUS(status));
    CALL("waitpid no child", waitpid(-1, &status, 0));
    CALL("waitpid WNOHANG no child", waitpid(-1, &status, WNOHANG));
    CALL("waitpid bad options", waitpid(-1, &status, 0x100000));
    child = fork();
    if (child == 0) {
        pause();
        _exit(0);
    }
    CALL("waitpid WNOHANG running", waitpid(child, &status, WNOHANG));
    CALL("kill child TERM", kill(child, SIGTERM));
    waitpid(child, &status, 0);
    VALUE("WIFSIGNALED", WIFSIGNALED(status));
    VALUE("WTERMSIG", WTERMSIG(status));
    CALL("kill bad signal", kill(getpid(), 99));
    CALL("kill reaped child", kill(child, 0));
    CALL("kill self 0", kill(getpid(), 0));
    child = fork();
    if (child == 0) {
        char *argv[] = {"/bin/sh", "-c", "exit 5", NULL};
        execv("/bin/sh", argv);
        _exit(99);
    }
    waitpid(child, &status, 0);
    VALUE("execve sh exit 5", WEXITSTATUS(status));
    CALL("execve missing", execl("cf-none", "cf-none", (char *)NULL));
    CALL("execve directory", execl("cf-d", "cf-d", (char *)NULL));
    CALL("execve not executable", execl("cf-b", "cf-b", (char *)NULL));
    CALL("unlink cf-d/f", unlink("cf-d/f"));
    CALL("rmdir cf-d", rmdir("cf-d"));
    CALL("unlink cf-b cf-l cf-loop", unlink("cf-b") | unlink("cf-l") | unlink("cf-loop"));
    CALL("unlink missing", unlink("cf-b"));

    /* socketpair: a connected Unix stream pair. */
    int sv[2];
    char sb[16];
    CALL("socketpair unix stream", socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
    CALL("socket write a->b", write(sv[0], "ping", 4));
    CALL("socket read b", read(sv[1], sb, sizeof sb));
    CALL("socket write b->a", write(sv[1], "pong!", 5));
    int avail = -1;
    CALL("socket FIONREAD a", ioctl(sv[0], FIONREAD, &avail));
    VALUE("socket bytes waiting", avail);
    CALL("socket read a", read(sv[0], sb, sizeof sb));
    struct stat sst;
    CALL("fstat socket", fstat(sv[0], &sst));
    VALUE("S_ISSOCK", S_ISSOCK(sst.st_mode));
    CALL("lseek socket", lseek(sv[0], 0, SEEK_SET));
    struct pollfd spf = {sv[0], POLLIN | POLLOUT, 0};
    CALL("poll socket", poll(&spf, 1, 0));
    VALUE("poll socket revents", spf.revents);
    CALL("close b", close(sv[1]));
    CALL("read after peer closed (EOF)", read(sv[0], sb, sizeof sb));
    signal(SIGPIPE, SIG_IGN);
    CALL("write after peer closed", write(sv[0], "x", 1));
    close(sv[0]);
    CALL("socketpair nonblock cloexec", socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv));
    VALUE("O_NONBLOCK set", (fcntl(sv[0], F_GETFL) & O_NONBLOCK) != 0);
    VALUE("FD_CLOEXEC set", fcntl(sv[1], F_GETFD));
    CALL("nonblocking read empty", read(sv[0], sb, sizeof sb));
    close(sv[0]);
    close(sv[1]);
    CALL("socketpair AF_INET", socketpair(AF_INET, SOCK_STREAM, 0, sv));
    CALL("socketpair bad domain", socketpair(12345, SOCK_STREAM, 0, sv));
    CALL("socketpair bad type", socketpair(AF_UNIX, 99, 0, sv));
    CALL("socketpair bad protocol", socketpair(AF_UNIX, SOCK_STREAM, 7, sv));
    CALL("socketpair bad pointer", socketpair(AF_UNIX, SOCK_STREAM, 0, (int *)8));

    /* statx (through syscall(2): glibc's wrapper may emulate it with fstatat): the same
     * attributes as fstatat, Linux's argument checks in Linux's order. */
    struct statx sx;
    struct stat fst;
    int xf = open("cf-x", O_CREAT | O_RDWR | O_TRUNC, 0640);
    VALUE("write 6 to cf-x", write(xf, "statx!", 6));
#define STATX(dfd, path, flags, mask, buf) syscall(SYS_statx, (dfd), (path), (flags), (mask), (buf))
    CALL("statx file", STATX(AT_FDCWD, "cf-x", 0, STATX_BASIC_STATS, &sx));
    CALL("fstatat file", fstatat(AT_FDCWD, "cf-x", &fst, 0));
    VALUE("stx_mask has STATX_BASIC_STATS", (sx.stx_mask & STATX_BASIC_STATS) == STATX_BASIC_STATS);
    VALUE("stx_size", sx.stx_size);
    VALUE("stx_mode", sx.stx_mode);
    VALUE("stx_nlink", sx.stx_nlink);
    VALUE("stx_uid, stx_gid", sx.stx_uid * 1000 + sx.stx_gid);
    VALUE("stx_blksize", sx.stx_blksize);
    VALUE("statx agrees with fstatat",
          sx.stx_ino == fst.st_ino && sx.stx_size == (unsigned long long)fst.st_size && sx.stx_mode == fst.st_mode &&
              sx.stx_nlink == fst.st_nlink && sx.stx_blocks == (unsigned long long)fst.st_blocks &&
              sx.stx_blksize == fst.st_blksize && makedev(sx.stx_dev_major, sx.stx_dev_minor) == fst.st_dev &&
              sx.stx_mtime.tv_sec == fst.st_mtim.tv_sec && sx.stx_mtime.tv_nsec == fst.st_mtim.tv_nsec &&
              sx.stx_ctime.tv_sec == fst.st_ctim.tv_sec && sx.stx_atime.tv_sec == fst.st_atim.tv_sec);
    VALUE("STATX_ATTR_MOUNT_ROOT known", (sx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) != 0);
    VALUE("a file is no mount root", (sx.stx_attributes & STATX_ATTR_MOUNT_ROOT) != 0);
    CALL("statx mask 0", STATX(AT_FDCWD, "cf-x", 0, 0, &sx));
    VALUE("mask 0: basic stats filled anyway", (sx.stx_mask & STATX_BASIC_STATS) == STATX_BASIC_STATS);
    CALL("statx STATX__RESERVED", STATX(AT_FDCWD, "cf-x", 0, 0x80000000U, &sx));
    CALL("statx bad flags", STATX(AT_FDCWD, "cf-x", 0x8000, STATX_BASIC_STATS, &sx));
    CALL("statx both sync types", STATX(AT_FDCWD, "cf-x", AT_STATX_FORCE_SYNC | AT_STATX_DONT_SYNC, STATX_BASIC_STATS, &sx));
    CALL("statx AT_STATX_DONT_SYNC", STATX(AT_FDCWD, "cf-x", AT_STATX_DONT_SYNC, STATX_BASIC_STATS, &sx));
    CALL("statx AT_STATX_FORCE_SYNC", STATX(AT_FDCWD, "cf-x", AT_STATX_FORCE_SYNC, STATX_BASIC_STATS, &sx));
    CALL("statx AT_NO_AUTOMOUNT", STATX(AT_FDCWD, "cf-x", AT_NO_AUTOMOUNT, STATX_BASIC_STATS, &sx));
    CALL("statx reserved mask, NULL path", STATX(AT_FDCWD, NULL, 0, 0x80000000U, &sx));
    CALL("statx bad flags, NULL path", STATX(AT_FDCWD, NULL, 0x8000, STATX_BASIC_STATS, &sx));
    CALL("statx NULL path", STATX(AT_FDCWD, NULL, 0, STATX_BASIC_STATS, &sx));
    CALL("statx NULL path, AT_EMPTY_PATH", STATX(xf, NULL, AT_EMPTY_PATH, STATX_BASIC_STATS, &sx));
    CALL("statx bad path pointer", STATX(AT_FDCWD, (char *)8, 0, STATX_BASIC_STATS, &sx));
    CALL("statx empty path", STATX(AT_FDCWD, "", 0, STATX_BASIC_STATS, &sx));
    sx.stx_size = 0;
    CALL("statx fd, AT_EMPTY_PATH", STATX(xf, "", AT_EMPTY_PATH, STATX_BASIC_STATS, &sx));
    VALUE("its stx_size", sx.stx_size);
    CALL("statx cwd, AT_EMPTY_PATH", STATX(AT_FDCWD, "", AT_EMPTY_PATH, STATX_BASIC_STATS, &sx));
    VALUE("cwd is a directory", S_ISDIR(sx.stx_mode));
    CALL("statx bad fd, AT_EMPTY_PATH", STATX(999, "", AT_EMPTY_PATH, STATX_BASIC_STATS, &sx));
    CALL("statx relative, bad dirfd", STATX(999, "cf-x", 0, STATX_BASIC_STATS, &sx));
    CALL("statx relative, dirfd a file", STATX(xf, "cf-x", 0, STATX_BASIC_STATS, &sx));
    CALL("statx absolute, bad dirfd", STATX(999, "/dev/null", 0, STATX_BASIC_STATS, &sx));
    CALL("statx missing", STATX(AT_FDCWD, "cf-none", 0, STATX_BASIC_STATS, &sx));
    CALL("statx file/x (ENOTDIR)", STATX(AT_FDCWD, "cf-x/x", 0, STATX_BASIC_STATS, &sx));
    CALL("statx NULL buffer", STATX(AT_FDCWD, "cf-x", 0, STATX_BASIC_STATS, NULL));
    CALL("statx bad buffer", STATX(AT_FDCWD, "cf-x", 0, STATX_BASIC_STATS, (void *)8));
    CALL("statx NULL buffer, missing path", STATX(AT_FDCWD, "cf-none", 0, STATX_BASIC_STATS, NULL));
    CALL("symlink cf-xl -> cf-x", symlink("cf-x", "cf-xl"));
    STATX(AT_FDCWD, "cf-xl", AT_SYMLINK_NOFOLLOW, STATX_BASIC_STATS, &sx);
    VALUE("AT_SYMLINK_NOFOLLOW: a link", S_ISLNK(sx.stx_mode));
    VALUE("its size is the target's length", sx.stx_size);
    STATX(AT_FDCWD, "cf-xl", 0, STATX_BASIC_STATS, &sx);
    VALUE("followed: a file", S_ISREG(sx.stx_mode));
    CALL("statx /dev/null", STATX(AT_FDCWD, "/dev/null", 0, STATX_BASIC_STATS, &sx));
    VALUE("/dev/null: S_ISCHR", S_ISCHR(sx.stx_mode));
    VALUE("/dev/null: rdev major, minor", sx.stx_rdev_major * 1000 + sx.stx_rdev_minor);
    STATX(AT_FDCWD, "/", 0, STATX_BASIC_STATS, &sx);
    VALUE("/ is a mount root", (sx.stx_attributes & STATX_ATTR_MOUNT_ROOT) != 0);
    STATX(AT_FDCWD, "/proc", 0, STATX_BASIC_STATS, &sx);
    VALUE("/proc is a mount root", (sx.stx_attributes & STATX_ATTR_MOUNT_ROOT) != 0);
    CALL("newfstatat AT_STATX_DONT_SYNC", fstatat(AT_FDCWD, "cf-x", &fst, AT_STATX_DONT_SYNC));
    CALL("newfstatat both sync types", fstatat(AT_FDCWD, "cf-x", &fst, AT_STATX_FORCE_SYNC | AT_STATX_DONT_SYNC));
    CALL("newfstatat bad flags", fstatat(AT_FDCWD, "cf-x", &fst, 0x8000));

    /* fsync, fdatasync and sync. */
    CALL("fsync file", fsync(xf));
    CALL("fdatasync file", fdatasync(xf));
    CALL("fsync directory", ({ int dd = open(".", O_RDONLY); int r = fsync(dd); close(dd); r; }));
    CALL("fsync pipe", ({ int pp[2]; pipe(pp); fsync(pp[0]); }));
    CALL("fsync /dev/null", ({ int dn = open("/dev/null", O_RDWR); fsync(dn); }));
    CALL("fsync bad fd", fsync(999));
    CALL("fdatasync bad fd", fdatasync(-1));
    sync();
    CALL("sync", 0);
    /* Names that are not UTF-8: looked up, they are names that do not exist (Cadence cannot
     * make them: its names are strings; docs/design/user.md). */
    CALL("stat \\xff", stat("\xff", &fst));
    CALL("open /tmp/\\xc3(", open("/tmp/\xc3(", O_RDONLY));
    CALL("unlink cf-\\xfe\\xff", unlink("cf-\xfe\xff"));
    CALL("rmdir \\x80", rmdir("\x80"));
    CALL("chdir a\\xe2\\x82/b", chdir("a\xe2\x82/b"));
    CALL("access \\xff/x", access("\xff/x", F_OK));

    /* A sparse file: sizes far past memory cost only the pages written (tmpfs). */
    {
        int sf = open("cf-sparse", O_RDWR | O_CREAT | O_TRUNC, 0644);
        struct stat sst;
        char c = 7;
        CALL("ftruncate 1 TiB", ftruncate(sf, 1LL << 40));
        fstat(sf, &sst);
        VALUE("its size", sst.st_size);
        CALL("pwrite a byte at 32 GiB", pwrite(sf, "x", 1, 1LL << 35));
        CALL("pread a hole", pread(sf, &c, 1, 4096));
        VALUE("the hole reads 0", c);
        CALL("pread the byte", pread(sf, &c, 1, 1LL << 35));
        VALUE("the byte", c);
        CALL("ftruncate LLONG_MAX", ftruncate(sf, 0x7fffffffffffffffLL));
        CALL("ftruncate -1", ftruncate(sf, -1));
        CALL("pwrite at LLONG_MAX", pwrite(sf, "x", 1, 0x7fffffffffffffffLL));
        CALL("ftruncate 0", ftruncate(sf, 0));
        fstat(sf, &sst);
        VALUE("its size after", sst.st_size);
        close(sf);
        CALL("unlink cf-sparse", unlink("cf-sparse"));
    }

    /* sendfile: Linux 6.1's checks in do_sendfile's order and what splice takes. */
    {
        int in = open("cf-sf", O_RDWR | O_CREAT | O_TRUNC, 0644);
        write(in, "sendfile", 8);
        int out = open("cf-sf2", O_RDWR | O_CREAT | O_TRUNC, 0644);
        int app = open("cf-sf2", O_WRONLY | O_APPEND);
        int dir = open(".", O_RDONLY);
        int sp[2], pp[2];
        socketpair(AF_UNIX, SOCK_STREAM, 0, sp);
        pipe(pp);
        off_t off = 0;
        CALL("sendfile file to file", sendfile(out, in, &off, 100));
        VALUE("the offset moved", off);
        CALL("sendfile file to pipe", sendfile(pp[1], in, &off, 100));
        off = 2;
        CALL("sendfile file to pipe from offset 2", sendfile(pp[1], in, &off, 100));
        CALL("sendfile bad offset pointer", sendfile(out, in, (off_t *)1, 10));
        CALL("sendfile bad in fd", sendfile(out, 999, NULL, 10));
        CALL("sendfile bad out fd", sendfile(999, in, NULL, 10));
        CALL("sendfile from a directory", sendfile(out, dir, NULL, 10));
        CALL("sendfile from a pipe", sendfile(out, pp[0], NULL, 10));
        CALL("sendfile from a pipe with an offset", sendfile(out, pp[0], &off, 10));
        CALL("sendfile from a socket to a file", sendfile(out, sp[0], NULL, 10));
        off = -1;
        CALL("sendfile negative offset", sendfile(out, in, &off, 10));
        CALL("sendfile to O_APPEND", sendfile(app, in, NULL, 10));
        CALL("sendfile from write-only", sendfile(out, app, NULL, 10));
        CALL("sendfile to read-only", sendfile(dir, in, NULL, 10));
        CALL("sendfile count 0 from a directory", sendfile(out, dir, NULL, 0));
        close(in), close(out), close(app), close(dir), close(sp[0]), close(sp[1]), close(pp[0]), close(pp[1]);
        CALL("unlink cf-sf cf-sf2", unlink("cf-sf") | unlink("cf-sf2"));
    }
    close(xf);
    CALL("unlink cf-x cf-xl", unlink("cf-x") | unlink("cf-xl"));
    /* A removed directory takes no new entries, and nothing mounts on it (a process whose
     * cwd was removed cannot make what no path reaches). */
    {
        int keep = open(".", O_RDONLY | O_DIRECTORY);
        close(open("cf-mv", O_CREAT | O_WRONLY, 0644));
        CALL("mkdir cf-dead", mkdir("cf-dead", 0755));
        CALL("chdir cf-dead", chdir("cf-dead"));
        CALL("rmdir ../cf-dead", rmdir("../cf-dead"));
        CALL("mkdir in a removed cwd", mkdir("x", 0755));
        CALL("creat in a removed cwd", open("f", O_CREAT | O_WRONLY, 0644));
        CALL("symlink in a removed cwd", symlink("t", "s"));
        CALL("rename into a removed cwd", renameat(keep, "cf-mv", AT_FDCWD, "moved"));
        CALL("mount on a removed cwd", mount("none", ".", "tmpfs", 0, NULL));
        CALL("stat . in a removed cwd", stat(".", &st));
        CALL("fchdir back", fchdir(keep));
        CALL("unlink cf-mv", unlink("cf-mv"));
        close(keep);
    }
    /* A running program's file is not written, and a file open for writing is not run
     * (ETXTBSY). */
    {
        char exe[256];
        ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
        exe[n > 0 ? n : 0] = 0;
        CALL("open own program O_WRONLY", open(exe, O_WRONLY));
        CALL("open own program O_RDWR|O_TRUNC", open(exe, O_RDWR | O_TRUNC));
        CALL("truncate own program", truncate(exe, 0));
        int rfd = open(exe, O_RDONLY);
        CALL("open own program O_RDONLY", rfd >= 0 ? 0 : -1);
        close(rfd);
        int w = open("cf-run", O_WRONLY | O_CREAT | O_TRUNC, 0755);
        CALL("write a script", write(w, "#!/bin/sh\nexit 3\n", 18) == 18 ? 0 : -1);
        pid_t c = fork();
        if (c == 0) {
            execl("./cf-run", "cf-run", (char *)NULL);
            _exit(errno == ETXTBSY ? 26 : 1);
        }
        int st = 0;
        waitpid(c, &st, 0);
        VALUE("execve a script open for writing: exit (26 = ETXTBSY)", WEXITSTATUS(st));
        close(w);
        c = fork();
        if (c == 0) {
            execl("./cf-run", "cf-run", (char *)NULL);
            _exit(1);
        }
        waitpid(c, &st, 0);
        VALUE("execve it after close: exit", WEXITSTATUS(st));
        CALL("unlink cf-run", unlink("cf-run"));
    }
    /* Trees stacked on one mountpoint: the top one is seen and named by the mountpoint's path,
     * and unmounts first. */
    {
        char cwd[512];
        CALL("mkdir cf-mnt", mkdir("cf-mnt", 0755));
        CALL("mount tmpfs on cf-mnt", mount("none", "cf-mnt", "tmpfs", 0, NULL));
        CALL("mkdir cf-mnt/lower", mkdir("cf-mnt/lower", 0755));
        CALL("mount tmpfs on cf-mnt again", mount("none", "cf-mnt", "tmpfs", 0, NULL));
        CALL("cf-mnt/lower hidden", access("cf-mnt/lower", F_OK));
        CALL("chdir cf-mnt", chdir("cf-mnt"));
        CALL("getcwd names the mountpoint", getcwd(cwd, sizeof cwd) && strlen(cwd) >= 7 && !strcmp(cwd + strlen(cwd) - 7, "/cf-mnt") ? 1 : -1);
        CALL("chdir ..", chdir(".."));
        CALL("umount cf-mnt (top)", umount("cf-mnt"));
        CALL("cf-mnt/lower seen again", access("cf-mnt/lower", F_OK));
        CALL("umount cf-mnt (bottom)", umount("cf-mnt"));
        CALL("umount cf-mnt (none left)", umount("cf-mnt"));
        CALL("rmdir cf-mnt", rmdir("cf-mnt"));
        /* A tree with another mounted inside: busy, unless detached lazily with it. */
        CALL("mkdir cf-mnt again", mkdir("cf-mnt", 0755));
        CALL("mount tmpfs on cf-mnt (outer)", mount("none", "cf-mnt", "tmpfs", 0, NULL));
        CALL("mkdir cf-mnt/in", mkdir("cf-mnt/in", 0755));
        CALL("mount tmpfs on cf-mnt/in", mount("none", "cf-mnt/in", "tmpfs", 0, NULL));
        CALL("umount cf-mnt with a mount inside", umount("cf-mnt"));
        CALL("umount2 cf-mnt MNT_DETACH", umount2("cf-mnt", MNT_DETACH));
        CALL("cf-mnt/in gone with it", access("cf-mnt/in", F_OK));
        CALL("umount cf-mnt (none left) again", umount("cf-mnt"));
        CALL("rmdir cf-mnt again", rmdir("cf-mnt"));
    }
    return 0;
}
