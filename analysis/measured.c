/* measured.c — what a run measured, as analysis holds it (an_measured): the
 * driver fills it from the engine's result (sim/driver/drv_measure.c), the
 * summary, the replay comparison and the results file read it. */
#include <stdlib.h>
#include <string.h>

#include "analysis.h"

void an_measured_release(an_measured *m)
{
  if (!m)
    return;
  for (size_t i = 0; m->links && i < m->num_links; i++)
    free(m->links[i].name);
  free(m->links);
  free(m->ranks);
  free(m->colls);
  free(m->usage);
  free(m->timeline);
  free(m->pod_out_bytes);
  free(m->pod_in_bytes);
  memset(m, 0, sizeof *m);
}
