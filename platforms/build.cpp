/* build.cpp — a cluster spec as a SimGrid platform, built in code.
 *
 * C++ only because SimGrid 3.32's C API cannot create zones, hosts and links;
 * everything else stays in C.  Every GPU is a host "gpu-<g>" whose speed is
 * the device's bf16 peak (compute is modelled as timed waits, so the speed is
 * informative).  Each GPU has a split-duplex NVLink link to the node's switch
 * ("nvl-<g>") and a split-duplex NIC link ("nic-<g>").
 */
#include <simgrid/s4u.hpp>
#include <string>
#include <vector>

#include "platform.h"

namespace sg4 = simgrid::s4u;

extern "C" int plat_cluster_build(const plat_cluster* c, void** hosts, st_err* err)
{
  try {
    auto* zone = sg4::create_full_zone(c->name);
    std::vector<sg4::Host*> h(c->num_gpus);
    std::vector<sg4::Link*> nvl(c->num_gpus), nic(c->num_gpus);
    double speed = c->device.peak_flops[WL_DTYPE_BF16];
    for (int g = 0; g < c->num_gpus; g++) {
      h[g] = zone->create_host("gpu-" + std::to_string(g), speed)->seal();
      nvl[g] = zone->create_split_duplex_link("nvl-" + std::to_string(g), c->intra_Bps)
                   ->set_latency(c->intra_lat_s)
                   ->seal();
      nic[g] = zone->create_split_duplex_link("nic-" + std::to_string(g), c->nic_Bps)
                   ->set_latency(c->nic_lat_s)
                   ->seal();
      hosts[g] = h[g];
    }
    for (int i = 0; i < c->num_gpus; i++)
      for (int j = i + 1; j < c->num_gpus; j++) {
        bool same = plat_gpu_node(c, i) == plat_gpu_node(c, j);
        auto& l = same ? nvl : nic;
        std::vector<sg4::LinkInRoute> links{{l[i], sg4::LinkInRoute::Direction::UP},
                                            {l[j], sg4::LinkInRoute::Direction::DOWN}};
        zone->add_route(h[i]->get_netpoint(), h[j]->get_netpoint(), nullptr, nullptr, links, true);
      }
    zone->seal();
  } catch (const std::exception& e) {
    return st_err_set(err, ST_EINPUT, "cluster '%s': cannot build the SimGrid platform: %s",
                      c->name, e.what());
  }
  return ST_OK;
}
