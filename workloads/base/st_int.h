/* st_int.h — what only workloads/base's own files share. */
#ifndef ST_INT_H
#define ST_INT_H

/* Remove every registered temporary output file (st_out_begin); safe in a
 * signal handler and in the memory guard's thread (unlink only). */
void st__out_unlink_all(void);

#endif
