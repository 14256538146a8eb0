/* wl_io_int.h — what the workload file's writer (wl_io_write.c) and reader
 * (wl_io_read.c) share: the format's name and version
 * (docs/workload-format.md).  Not part of the public interface. */
#ifndef WL_IO_INT_H
#define WL_IO_INT_H

#define WL_FORMAT_NAME "simtrain-workload"
#define WL_FORMAT_VERSION 1

#endif
