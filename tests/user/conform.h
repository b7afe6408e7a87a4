/* What the conformance programs share: errno names and the line formats. Each line is
 * `<label> = <sign of the result> <errno name>` (CALL) or `<label> = <value>` (VALUE), so the
 * same binary's output on Cadence and on Linux can be compared line by line. */
#ifndef CONFORM_H
#define CONFORM_H
#include <errno.h>
#include <stdio.h>

static const char *errno_name(int e) {
    static char buf[16];
    switch (e) {
    case 0: return "0";
    case EPERM: return "EPERM";
    case ENOENT: return "ENOENT";
    case ESRCH: return "ESRCH";
    case EBADF: return "EBADF";
    case ECHILD: return "ECHILD";
    case EAGAIN: return "EAGAIN";
    case ENOMEM: return "ENOMEM";
    case EACCES: return "EACCES";
    case EFAULT: return "EFAULT";
    case EBUSY: return "EBUSY";
    case EEXIST: return "EEXIST";
    case ENOTDIR: return "ENOTDIR";
    case EISDIR: return "EISDIR";
    case EINVAL: return "EINVAL";
    case ENOTTY: return "ENOTTY";
    case ESPIPE: return "ESPIPE";
    case EPIPE: return "EPIPE";
    case ERANGE: return "ERANGE";
    case ETXTBSY: return "ETXTBSY";
    case ENAMETOOLONG: return "ENAMETOOLONG";
    case ENOSYS: return "ENOSYS";
    case ENOTEMPTY: return "ENOTEMPTY";
    case ELOOP: return "ELOOP";
    case E2BIG: return "E2BIG";
    case EINTR: return "EINTR";
    case ETIMEDOUT: return "ETIMEDOUT";
    case EDEADLK: return "EDEADLK";
    case EOWNERDEAD: return "EOWNERDEAD";
    case EOPNOTSUPP: return "EOPNOTSUPP";
    case EMFILE: return "EMFILE";
    case EIO: return "EIO";
    case ENXIO: return "ENXIO";
    case EXDEV: return "EXDEV";
    case EIDRM: return "EIDRM";
    case EMSGSIZE: return "EMSGSIZE";
    case ENOTSOCK: return "ENOTSOCK";
    case EFBIG: return "EFBIG";
    case ENOSPC: return "ENOSPC";
    case EOVERFLOW: return "EOVERFLOW";
    case EINPROGRESS: return "EINPROGRESS";
    default: snprintf(buf, sizeof buf, "errno%d", e); return buf;
    }
}

#define SIGN(r) ((r) < 0 ? -1L : ((r) > 0 ? 1L : 0L))
#define CALL(label, expr)                                                                  \
    do {                                                                                   \
        errno = 0;                                                                         \
        long r_ = (long)(expr);                                                            \
        printf("%-" CONFORM_WIDTH "s = %ld %s\n", label, SIGN(r_), r_ < 0 ? errno_name(errno) : "0"); \
    } while (0)
#define VALUE(label, expr) printf("%-" CONFORM_WIDTH "s = %ld\n", label, (long)(expr))
#endif
