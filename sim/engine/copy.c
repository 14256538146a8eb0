/* copy.c — copies between a GPU's memory and its node's host memory
 * (offload).
 *
 *  9. Copies.  The host is not a rank: node n's host memory is a SimGrid
 *     host of its own (host-<n>, endpoint num_gpus + n of the platform,
 *     platforms/host.c), and a copy is one direct flow between it and the
 *     GPU (sg_host_sendto: no mailbox, no peer to wait for), on the GPU's
 *     link to host memory and the node's memory link, shared max-min fairly
 *     with the node's other copies (and, where the spec models PCIe, with
 *     the GPU's NIC traffic).  The copy engines do not take the SMs, so a
 *     copy does not stretch compute (design note 2); its time is offload
 *     time in the accounting (design note 5), exposed when nothing else
 *     runs.
 */
#include <simgrid/host.h>

#include "eng_int.h"

void eng__run_copy(int rank, const wl_op *op)
{
  const plat_cluster *cl = eng__E.cl;
  int gpu = rank, mem = plat_host_endpoint(cl, plat_gpu_node(cl, rank));
  int src = op->sub == WL_COPY_D2H ? gpu : mem, dst = op->sub == WL_COPY_D2H ? mem : gpu;
  eng__acct_offload(rank, 1);
  if (op->bytes > 0) {
    eng__account_copy(src, dst, op->bytes);
    sg_host_sendto(eng__E.hosts[src], eng__E.hosts[dst], op->bytes);
  }
  eng__acct_offload(rank, -1);
  eng__E.events++;
}
