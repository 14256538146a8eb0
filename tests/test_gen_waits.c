/* test_gen_waits.c — what the optimizer step waits for.
 *
 * The step must not start before every gradient reduction of the rank has
 * ended.  Reductions overlapped with the backward pass (overlap_grad_reduce,
 * ZeRO-3's per-layer reduce-scatters) run on their own stream, in order, so
 * the optimizer waiting for the last of them is enough; waiting for the
 * first 16 (the generator's wait list) let it start while llama3-8b's 32
 * layers were still being reduced.  Checked by reachability over the
 * program: an op is done before the optimizer when the optimizer waits on
 * it or on an op after it on its stream, transitively.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "workload.h"

/* Whether op `target` of p is ordered before op `from` (waits and stream order). */
static int before(const wl_program *p, uint32_t from, uint32_t target)
{
  uint8_t *seen = calloc(p->num_ops, 1);
  uint32_t *stack = malloc(p->num_ops * sizeof *stack);
  size_t n = 0;
  int found = 0;
  stack[n++] = from;
  while (n && !found) {
    uint32_t i = stack[--n];
    const wl_op *o = &p->ops[i];
    for (uint32_t w = 0; w < o->wait_count; w++) {
      uint32_t t = p->waits[o->wait_first + w];
      if (!seen[t]) {
        seen[t] = 1;
        stack[n++] = t;
      }
    }
    for (uint32_t j = i; j-- > 0;) /* the op before it on its stream */
      if (p->ops[j].stream == o->stream) {
        if (!seen[j]) {
          seen[j] = 1;
          stack[n++] = j;
        }
        break;
      }
    found = seen[target];
  }
  free(seen);
  free(stack);
  return found;
}

static void check(const char *layout, int gpus)
{
  wl_model m;
  wl_layout l;
  wl_workload *wl = NULL;
  st_err err = {0};
  assert_int_equal(wl_model_load("llama3-8b", &m, &err), 0);
  if (wl_layout_parse(layout, gpus, &m, &l, &err) || wl_generate(&m, &l, &wl, &err))
    fail_msg("%s: %s", layout, err.msg);
  const wl_program *p = &wl->programs[0];
  long opt = -1, last_red = -1;
  int reductions = 0;
  for (size_t i = 0; i < p->num_ops; i++) {
    const wl_op *o = &p->ops[i];
    if (o->kind == WL_OP_COMPUTE && o->sub == WL_CLASS_OPTIMIZER && opt < 0)
      opt = (long)i;
    if (o->kind == WL_OP_COLL && opt < 0 && o->phase == WL_PHASE_BACKWARD &&
        (o->sub == WL_COLL_REDUCESCATTER || o->sub == WL_COLL_ALLREDUCE) &&
        !strcmp(wl->roles[o->role], "dp")) {
      last_red = (long)i;
      reductions++;
    }
  }
  assert_true(opt >= 0 && last_red >= 0);
  if (reductions <= 16)
    fail_msg("%s: %d reductions: the case must have more than the wait list's 16", layout,
             reductions);
  if (!before(p, (uint32_t)opt, (uint32_t)last_red))
    fail_msg("%s: the optimizer does not wait for the last of %d reductions", layout, reductions);
  wl_workload_destroy(wl);
}

static void test_optimizer__waits_for_every_reduction(void **state)
{
  (void)state;
  check("tp=2,dp=4,zero=3,mbs=1,gbs=16", 8);
  check("tp=8,dp=2,mbs=2,gbs=32,zero=1,overlap_grad_reduce=1,bucket=10M", 16);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_optimizer__waits_for_every_reduction),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
