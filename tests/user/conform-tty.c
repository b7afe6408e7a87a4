/* Differential conformance: the console as a terminal. termios, the window size, FIONREAD,
 * the controlling terminal (TIOCSCTTY / TIOCNOTTY, /dev/tty), the foreground process group
 * (tcgetpgrp / tcsetpgrp, TIOCGSID), job control (a background read stops its group with
 * SIGTTIN, or is EIO if SIGTTIN is ignored; a background write with TOSTOP stops with SIGTTOU)
 * and the virtual terminal /dev/tty2 (its device number, termios, window size, becoming the
 * controlling terminal when a session leader opens it).
 * Run with the console on fds 0-2 and no controlling terminal (Linux's init script, Cadence's
 * `sh=`); the job-control part runs in a child that makes a session and takes the console.
 * Prints what each call returned; the output must equal Linux's
 * (tests/fixtures/conform-tty.linux-6.1.txt). No pids or times are printed. */
#define _GNU_SOURCE
#define CONFORM_WIDTH "44"
#include "conform.h"
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

static void flags(const char *what, const struct termios *t) {
    printf("%-44s = %o %o %o\n", what, t->c_iflag, t->c_oflag, t->c_lflag);
}

static int session_part(void) {
    CALL("setsid", setsid() > 0 ? 0 : -1);
    CALL("TIOCGPGRP before TIOCSCTTY", ioctl(0, TIOCGPGRP, &(pid_t){0}));
    CALL("TIOCSCTTY", ioctl(0, TIOCSCTTY, 0));
    CALL("TIOCSCTTY again", ioctl(0, TIOCSCTTY, 0));
    pid_t fg = tcgetpgrp(0);
    VALUE("tcgetpgrp is my group", fg == getpgrp());
    pid_t sid = -1;
    CALL("TIOCGSID", ioctl(0, TIOCGSID, &sid));
    VALUE("session is mine", sid == getsid(0));
    int t = open("/dev/tty", O_RDWR);
    CALL("open /dev/tty with a ctty", t);
    CALL("tcgetpgrp on /dev/tty", tcgetpgrp(t) == fg ? 0 : -1);
    close(t);
    CALL("tcsetpgrp no such group", tcsetpgrp(0, 4000000));
    CALL("tcsetpgrp -1", tcsetpgrp(0, -1));
    CALL("TIOCSPGRP bad pointer", ioctl(0, TIOCSPGRP, (void *)8));
    CALL("tcsetpgrp my own group", tcsetpgrp(0, getpgrp()));

    /* A background process group, on /dev/tty (Linux skips job control on /dev/console). */
    int tt = open("/dev/tty", O_RDWR);
    int p[2];
    if (pipe(p) != 0) return 1;
    pid_t c = fork();
    if (c == 0) {
        setpgid(0, 0);
        char go;
        if (read(p[0], &go, 1) != 1) _exit(9);
        char ch;
        ssize_t r = read(tt, &ch, 1); /* background: SIGTTIN stops us */
        _exit(r < 0 ? 2 : 3);
    }
    setpgid(c, c);
    if (write(p[1], "g", 1) != 1) return 1;
    int st;
    CALL("waitpid WUNTRACED background reader", waitpid(c, &st, WUNTRACED) == c ? 0 : -1);
    VALUE("stopped by SIGTTIN", WIFSTOPPED(st) ? WSTOPSIG(st) : -1);
    kill(c, SIGKILL);
    waitpid(c, &st, 0);
    VALUE("then killed", WIFSIGNALED(st) ? WTERMSIG(st) : -1);

    c = fork();
    if (c == 0) {
        setpgid(0, 0);
        signal(SIGTTIN, SIG_IGN);
        char ch;
        ssize_t r = read(tt, &ch, 1);
        printf("%-44s = %ld %s\n", "background read, SIGTTIN ignored", (long)(r < 0 ? -1 : r), r < 0 ? errno_name(errno) : "0");
        _exit(0);
    }
    setpgid(c, c);
    waitpid(c, &st, 0);
    VALUE("child exit", WIFEXITED(st) ? WEXITSTATUS(st) : -1);

    c = fork();
    if (c == 0) {
        setpgid(0, 0);
        ssize_t r = write(tt, "", 0);
        printf("%-44s = %ld\n", "background write, no TOSTOP", (long)r);
        _exit(0);
    }
    setpgid(c, c);
    waitpid(c, &st, 0);

    struct termios tio, saved;
    tcgetattr(0, &saved);
    tio = saved;
    tio.c_lflag |= TOSTOP;
    tcsetattr(0, TCSANOW, &tio);
    c = fork();
    if (c == 0) {
        setpgid(0, 0);
        ssize_t r = write(tt, "x\n", 2);
        _exit(r < 0 ? 2 : 3);
    }
    setpgid(c, c);
    CALL("waitpid WUNTRACED background writer", waitpid(c, &st, WUNTRACED) == c ? 0 : -1);
    VALUE("TOSTOP: stopped by SIGTTOU", WIFSTOPPED(st) ? WSTOPSIG(st) : -1);
    kill(c, SIGKILL);
    waitpid(c, &st, 0);
    tcsetattr(0, TCSANOW, &saved);

    /* Giving the foreground away and back (SIGTTOU ignored, as shells do). */
    signal(SIGTTOU, SIG_IGN);
    c = fork();
    if (c == 0) {
        setpgid(0, 0);
        pause();
        _exit(0);
    }
    setpgid(c, c);
    CALL("tcsetpgrp to the child's group", tcsetpgrp(0, c));
    VALUE("foreground is the child's", tcgetpgrp(0) == c);
    CALL("tcsetpgrp back, from the background", tcsetpgrp(0, getpgrp()));
    kill(c, SIGKILL);
    waitpid(c, &st, 0);

    struct stat sb;
    fstat(tt, &sb);
    VALUE("/dev/tty's rdev", (long)sb.st_rdev);
    close(tt);
    /* A session leader's TIOCNOTTY hangs up its foreground group: its own here. */
    signal(SIGHUP, SIG_IGN);
    CALL("TIOCNOTTY", ioctl(0, TIOCNOTTY));
    CALL("tcgetpgrp after TIOCNOTTY", tcgetpgrp(0));
    CALL("open /dev/tty after TIOCNOTTY", open("/dev/tty", O_RDWR));
    return 0;
}

/* tty_nr of /proc/self/stat (field 7). */
static long tty_nr(void) {
    char b[512];
    int fd = open("/proc/self/stat", O_RDONLY);
    ssize_t n = read(fd, b, sizeof b - 1);
    close(fd);
    if (n <= 0) return -1;
    b[n] = 0;
    char *p = strrchr(b, ')');
    int pid_ppid_pgrp_sid[3];
    char state;
    long nr = -1;
    if (!p || sscanf(p + 1, " %c %d %d %d %ld", &state, &pid_ppid_pgrp_sid[0], &pid_ppid_pgrp_sid[1], &pid_ppid_pgrp_sid[2], &nr) != 5)
        return -1;
    return nr;
}

/* A virtual terminal, /dev/tty2 (character device 4:2 on both kernels; Linux's is a VGA vt
 * nobody types on, Cadence's a kernel vt whose output goes to the console as `[tty2] ...`,
 * which the comparison leaves out with the kernel's lines). Run in a new session. */
static int vt_part(void) {
    CALL("setsid (vt part)", setsid() > 0 ? 0 : -1);
    int v = open("/dev/tty2", O_RDWR | O_NOCTTY);
    CALL("open /dev/tty2 O_NOCTTY", v);
    struct stat vs;
    CALL("fstat /dev/tty2", fstat(v, &vs));
    VALUE("/dev/tty2: S_ISCHR", S_ISCHR(vs.st_mode));
    VALUE("/dev/tty2's rdev", (long)vs.st_rdev);
    VALUE("/dev/tty2: major, minor", major(vs.st_rdev) * 1000 + minor(vs.st_rdev));
    VALUE("/dev/tty2's mode", vs.st_mode & 07777);
    CALL("isatty /dev/tty2", isatty(v) ? 0 : -1);
    pid_t pg = -1;
    CALL("TIOCGPGRP, opened O_NOCTTY", ioctl(v, TIOCGPGRP, &pg));
    VALUE("tty_nr, opened O_NOCTTY", tty_nr());
    CALL("open /dev/tty, opened O_NOCTTY", open("/dev/tty", O_RDWR));
    struct termios t, raw, now;
    CALL("tcgetattr /dev/tty2", tcgetattr(v, &t));
    flags("tty2: iflag oflag lflag", &t);
    VALUE("tty2: VMIN", t.c_cc[VMIN]);
    VALUE("tty2: VINTR", t.c_cc[VINTR]);
    raw = t;
    cfmakeraw(&raw);
    CALL("tcsetattr /dev/tty2 raw", tcsetattr(v, TCSANOW, &raw));
    tcgetattr(v, &now);
    flags("tty2 raw: iflag oflag lflag", &now);
    CALL("tcsetattr /dev/tty2 back", tcsetattr(v, TCSANOW, &t));
    tcgetattr(v, &now);
    flags("tty2 restored", &now);
    CALL("tcgetattr /dev/tty2 bad pointer", ioctl(v, TCGETS, (void *)8));
    struct winsize ws;
    CALL("TIOCGWINSZ /dev/tty2", ioctl(v, TIOCGWINSZ, &ws));
    VALUE("tty2: rows, cols", ws.ws_row * 1000 + ws.ws_col);
    CALL("lseek /dev/tty2", lseek(v, 0, SEEK_SET));
    char ch;
    CALL("pread /dev/tty2", pread(v, &ch, 1, 0));
    CALL("write /dev/tty2", write(v, "conform-tty on tty2\n", 20));
    fcntl(v, F_SETFL, O_NONBLOCK);
    CALL("nonblocking read /dev/tty2, no input", read(v, &ch, 1));
    CALL("BLKGETSIZE64 on /dev/tty2", ioctl(v, 0x80081272, &(unsigned long long){0}));
    close(v);

    int w = open("/dev/tty4", O_WRONLY);
    CALL("open /dev/tty4 O_WRONLY", w);
    CALL("TIOCGPGRP, opened write-only", ioctl(w, TIOCGPGRP, &pg));
    close(w);
    int c = open("/dev/tty2", O_RDWR);
    CALL("open /dev/tty2, session leader", c);
    CALL("TIOCGPGRP after open", ioctl(c, TIOCGPGRP, &pg));
    VALUE("foreground is my group", pg == getpgrp());
    pid_t sid = -1;
    CALL("TIOCGSID /dev/tty2", ioctl(c, TIOCGSID, &sid));
    VALUE("session is mine", sid == getsid(0));
    VALUE("tty_nr, /dev/tty2 the ctty", tty_nr());
    int tt = open("/dev/tty", O_RDWR);
    CALL("open /dev/tty, tty2 the ctty", tt);
    struct stat ts;
    fstat(tt, &ts);
    VALUE("/dev/tty's rdev", (long)ts.st_rdev);
    CALL("tcgetpgrp on /dev/tty", tcgetpgrp(tt) == pg ? 0 : -1);
    CALL("tcsetpgrp on /dev/tty2", tcsetpgrp(c, getpgrp()));
    CALL("tcsetpgrp no such group", tcsetpgrp(c, 4000000));
    close(tt);
    int o = open("/dev/tty3", O_RDWR);
    CALL("open /dev/tty3, with a ctty", o);
    CALL("TIOCGPGRP /dev/tty3, not the ctty", ioctl(o, TIOCGPGRP, &pg));
    CALL("TIOCSCTTY /dev/tty3, with a ctty", ioctl(o, TIOCSCTTY, 0));
    close(o);
    signal(SIGHUP, SIG_IGN);
    CALL("TIOCNOTTY /dev/tty2", ioctl(c, TIOCNOTTY));
    CALL("TIOCGPGRP after TIOCNOTTY", ioctl(c, TIOCGPGRP, &pg));
    VALUE("tty_nr after TIOCNOTTY", tty_nr());
    CALL("TIOCSCTTY /dev/tty2", ioctl(c, TIOCSCTTY, 0));
    VALUE("tty_nr after TIOCSCTTY", tty_nr());
    pid_t k = fork();
    if (k == 0) {
        CALL("child: TIOCGPGRP, inherited ctty", ioctl(c, TIOCGPGRP, &pg));
        VALUE("child: tty_nr", tty_nr());
        _exit(0);
    }
    waitpid(k, NULL, 0);
    close(c);
    return 0;
}

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    CALL("isatty(0)", isatty(0) ? 0 : -1);
    struct termios t;
    CALL("tcgetattr", tcgetattr(0, &t));
    flags("iflag oflag lflag", &t);
    VALUE("VMIN", t.c_cc[VMIN]);
    VALUE("VINTR", t.c_cc[VINTR]);
    VALUE("VERASE", t.c_cc[VERASE]);
    VALUE("VEOF", t.c_cc[VEOF]);
    VALUE("VSUSP", t.c_cc[VSUSP]);
    struct termios raw = t;
    cfmakeraw(&raw);
    CALL("tcsetattr raw", tcsetattr(0, TCSANOW, &raw));
    struct termios now;
    tcgetattr(0, &now);
    flags("raw: iflag oflag lflag", &now);
    CALL("tcsetattr back", tcsetattr(0, TCSAFLUSH, &t));
    tcgetattr(0, &now);
    flags("restored", &now);
    CALL("tcsetattr bad pointer", ioctl(0, TCSETS, (void *)8));
    CALL("tcgetattr bad pointer", ioctl(0, TCGETS, (void *)8));
    int n = -1;
    CALL("FIONREAD", ioctl(0, FIONREAD, &n));
    VALUE("bytes waiting", n);
    struct winsize ws;
    CALL("TIOCGWINSZ", ioctl(0, TIOCGWINSZ, &ws));
    struct winsize set = {30, 100, 0, 0}, back;
    CALL("TIOCSWINSZ", ioctl(0, TIOCSWINSZ, &set));
    ioctl(0, TIOCGWINSZ, &back);
    VALUE("rows, cols", back.ws_row * 1000 + back.ws_col);
    ioctl(0, TIOCSWINSZ, &ws);
    CALL("tcflush TCIFLUSH", tcflush(0, TCIFLUSH));
    CALL("tcflush bad queue", tcflush(0, 7));
    CALL("tcdrain", tcdrain(0));
    CALL("unknown ioctl", ioctl(0, 0x5499, 0));
    CALL("TCGETS on a pipe", ({ int p[2]; pipe(p); ioctl(p[0], TCGETS, &now); }));
    CALL("isatty(pipe)", ({ int p[2]; pipe(p); isatty(p[0]) ? 0 : -1; }));
    CALL("TCGETS on /dev/null", ({ int d = open("/dev/null", O_RDWR); ioctl(d, TCGETS, &now); }));
    CALL("TIOCGPGRP without a ctty", ioctl(0, TIOCGPGRP, &n));
    CALL("TIOCGSID without a ctty", ioctl(0, TIOCGSID, &n));
    CALL("TIOCNOTTY without a ctty", ioctl(0, TIOCNOTTY));
    CALL("open /dev/tty without a ctty", open("/dev/tty", O_RDWR));
    /* In a child: the program itself may be a session leader (a shell that execs its last
     * command). */
    pid_t nl = fork();
    if (nl == 0) {
        CALL("TIOCSCTTY, not a session leader", ioctl(0, TIOCSCTTY, 0));
        _exit(0);
    }
    waitpid(nl, NULL, 0);

    pid_t c = fork();
    if (c == 0) _exit(session_part());
    int st;
    waitpid(c, &st, 0);
    VALUE("session part exit", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
    c = fork();
    if (c == 0) _exit(vt_part());
    waitpid(c, &st, 0);
    VALUE("vt part exit", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
    printf("conform-tty: done\n");
    return 0;
}
