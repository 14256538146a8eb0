/* build.cpp — a cluster as a SimGrid platform: one custom routed zone.
 *
 * C++ only because SimGrid 3.32's C API cannot create zones, hosts and links
 * nor route between them; the routing itself is C (topo.c).
 *
 * Why a custom zone: explicit routes (Full zone, XML) cost memory with the
 * square of the GPUs, and SimGrid's fat-tree-of-zones construction grew
 * quadratically in load time.  PlatZone holds only the hosts (one per GPU)
 * and the directed links (a number linear in the GPUs, see topo.c), and
 * answers get_local_route() by computing the route when SimGrid asks: the
 * link ids come from plat__route_ids(), the same function plat_route_get()
 * and the XML writer use, so all three agree.  A route's latency is the sum
 * of its links' latencies plus switch_lat_s per switch crossed.
 *
 * All links are SHARED (max-min fair between the flows crossing them); each
 * direction is its own link, so a link is full-duplex as a pair.
 */
#include <simgrid/kernel/routing/NetPoint.hpp>
#include <simgrid/kernel/routing/NetZoneImpl.hpp>
#include <simgrid/s4u.hpp>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cerrno>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>
#include <string>
#include <unordered_map>
#include <vector>

#include "plat_int.h"

namespace sg4 = simgrid::s4u;
namespace skr = simgrid::kernel::routing;

namespace {

/* plat_route_alias(): whether routes go through the aliases */
bool g_alias_on = true;
class PlatZone;
PlatZone* g_zone = nullptr;

class PlatZone : public skr::NetZoneImpl {
public:
  PlatZone(const std::string& name, const plat_cluster& c) : skr::NetZoneImpl(name), c_(c)
  {
    c_.spec_json = nullptr; /* a copy of the numbers only: no owned pointers */
    c_.xml_path  = nullptr;
    c_.xml_load_path = nullptr;
    c_.xml_copy  = nullptr;
    plat__layout(&c_, &lay_);
  }

  void build(void** hosts)
  {
    double speed = c_.device.peak_flops[WL_DTYPE_BF16];
    if (speed <= 0)
      speed = c_.device.peak_flops[WL_DTYPE_FP16];
    if (speed <= 0)
      speed = 1e12;
    host_of_id_.assign(c_.num_gpus, -1);
    for (int g = 0; g < c_.num_gpus; g++) {
      sg4::Host* h = create_host("gpu-" + std::to_string(g), std::vector<double>{speed});
      h->seal();
      unsigned long id = h->get_netpoint()->id();
      if (id >= host_of_id_.size())
        host_of_id_.resize(id + 1, -1);
      host_of_id_[id] = g;
      hosts[g] = h;
    }
    /* host memory (host.c): node n's is endpoint num_gpus + n, "host-<n>" */
    for (int n = 0; c_.host_memory && n < c_.num_nodes; n++) {
      sg4::Host* h = create_host("host-" + std::to_string(n), std::vector<double>{1e9});
      h->seal();
      unsigned long id = h->get_netpoint()->id();
      if (id >= host_of_id_.size())
        host_of_id_.resize(id + 1, -1);
      host_of_id_[id] = c_.num_gpus + n;
      hosts[c_.num_gpus + n] = h;
    }
    links_.resize(lay_.total);
    lat_.resize(lay_.total);
    plat_link_info li;
    for (long id = 0; id < lay_.total; id++) {
      plat__link_info(&c_, &lay_, id, &li);
      if (li.kind == PLAT_LINK_UNUSED) { /* no route crosses it: not built */
        links_[id] = nullptr;
        lat_[id]   = 0;
        continue;
      }
      sg4::Link* l = create_link(li.name, std::vector<double>{li.bw_Bps});
      l->set_latency(li.lat_s);
      l->seal();
      links_[id] = l->get_impl();
      lat_[id]   = li.lat_s;
    }
  }

  /* every route's link from[i] becomes to[i] (n = 0: none) */
  void set_alias(void* const* from, void* const* to, size_t n)
  {
    alias_.clear();
    if (n == 0)
      return;
    std::unordered_map<const simgrid::kernel::resource::StandardLinkImpl*,
                       simgrid::kernel::resource::StandardLinkImpl*>
        m;
    for (size_t i = 0; i < n; i++)
      m[static_cast<sg4::Link*>(from[i])->get_impl()] = static_cast<sg4::Link*>(to[i])->get_impl();
    alias_.assign(links_.size(), nullptr);
    for (size_t id = 0; id < links_.size(); id++) {
      auto it = links_[id] ? m.find(links_[id]) : m.end();
      if (it != m.end())
        alias_[id] = it->second;
    }
  }

protected:
  void get_local_route(const skr::NetPoint* src, const skr::NetPoint* dst, skr::Route* into,
                       double* latency) override
  {
    int s = gpu_of(src), d = gpu_of(dst);
    int ids[PLAT_ROUTE_MAX];
    int switches = 0;
    int n = plat__route_ids(&c_, &lay_, s, d, ids, &switches);
    xbt_assert(n >= 0, "no route from endpoint %d to %d (longer than %d links, or a host memory "
               "another node's GPU asked for)", s, d, PLAT_ROUTE_MAX);
    bool alias = g_alias_on && !alias_.empty();
    for (int i = 0; i < n; i++) {
      simgrid::kernel::resource::StandardLinkImpl* l = links_[ids[i]];
      if (alias && alias_[ids[i]])
        l = alias_[ids[i]];
      into->link_list_.push_back(l); /* the latency stays the real link's (the same) */
      if (latency)
        *latency += lat_[ids[i]];
    }
    if (latency)
      *latency += switches * c_.switch_lat_s;
  }

private:
  int gpu_of(const skr::NetPoint* p) const
  {
    unsigned long id = p->id();
    xbt_assert(id < host_of_id_.size() && host_of_id_[id] >= 0, "'%s' is not a GPU of this cluster",
               p->get_cname());
    return host_of_id_[id];
  }

  plat_cluster c_;
  plat__lay lay_;
  std::vector<int> host_of_id_;
  std::vector<simgrid::kernel::resource::StandardLinkImpl*> links_;
  std::vector<simgrid::kernel::resource::StandardLinkImpl*> alias_; /* by link id, or empty */
  std::vector<double> lat_;
};

} // namespace

extern "C" int plat_cluster_build(const plat_cluster* c, void** hosts, st_err* err)
{
  /* The engine, created just before, installs its own SIGINT handler
   * (exit 1, nothing said): put back the one that removes temporary output
   * files and exits 130 (st_common.h). */
  st_signals_install();
  try {
    auto* e = sg4::Engine::get_instance();
    if (c->fabric_kind == PLAT_FABRIC_XML) {
      e->load_platform(c->xml_load_path ? c->xml_load_path : c->xml_path);
      /* SimGrid accepts any rate and divides by it: a link of 0, negative or
       * NaN bandwidth aborted the run instead of being reported. */
      for (const sg4::Link* l : e->get_all_links()) {
        double bw = l->get_bandwidth(), lat = l->get_latency();
        if (!(bw > 0) || !std::isfinite(bw))
          return st_err_set(err, ST_EINPUT,
                            "platform '%s': link '%s': bandwidth %g B/s is not a positive finite "
                            "rate",
                            c->xml_path, l->get_cname(), bw);
        if (!(lat >= 0) || !std::isfinite(lat))
          return st_err_set(err, ST_EINPUT,
                            "platform '%s': link '%s': latency %g s is not a finite time >= 0",
                            c->xml_path, l->get_cname(), lat);
      }
      for (int g = 0; g < c->num_gpus; g++) {
        sg4::Host* h = e->host_by_name_or_null("gpu-" + std::to_string(g));
        if (!h)
          return st_err_set(err, ST_EINPUT, "platform '%s': host 'gpu-%d' is missing", c->xml_path, g);
        hosts[g] = h;
      }
      for (int n = 0; c->host_memory && n < c->num_nodes; n++) {
        sg4::Host* h = e->host_by_name_or_null("host-" + std::to_string(n));
        if (!h)
          return st_err_set(err, ST_EINPUT,
                            "platform '%s': host 'host-%d' (node %d's host memory, which the "
                            "workload's copies to and from host memory need) is missing; "
                            "simtrain platform --host-memory writes it",
                            c->xml_path, n, n);
        hosts[c->num_gpus + n] = h;
      }
      return ST_OK;
    }
    if (e->get_netzone_root() != nullptr)
      return st_err_set(err, ST_ESIM,
                        "cluster '%s': a SimGrid platform is already loaded in this process "
                        "(one platform per process)",
                        c->name);
    auto* zone = new PlatZone(c->name, *c); /* the first zone becomes the root; SimGrid frees it */
    zone->build(hosts);
    zone->seal();
    g_zone = zone;
  } catch (const std::exception& ex) {
    return st_err_set(err, ST_EINPUT, "cluster '%s': cannot build the SimGrid platform: %s", c->name,
                      ex.what());
  }
  return ST_OK;
}

extern "C" int plat_route_alias(void* const* from, void* const* to, size_t n)
{
  if (!g_zone)
    return n == 0 ? ST_OK : ST_EUSAGE;
  g_zone->set_alias(from, to, n);
  return ST_OK;
}

extern "C" void plat_route_alias_on(int on) { g_alias_on = on != 0; }

extern "C" void plat_sendto_all(void* from, void* const* to, const double* bytes, size_t n)
{
  std::vector<sg4::CommPtr> comms;
  comms.reserve(n);
  for (size_t i = 0; i < n; i++)
    comms.push_back(sg4::Comm::sendto_async(static_cast<sg4::Host*>(from), static_cast<sg4::Host*>(to[i]),
                                            static_cast<uint64_t>(std::llround(bytes[i]))));
  for (auto& c : comms)
    c->wait();
}

extern "C" void* plat_sendto_async(void* from, void* to, double bytes)
{
  sg4::CommPtr c = sg4::Comm::sendto_async(static_cast<sg4::Host*>(from), static_cast<sg4::Host*>(to),
                                           static_cast<uint64_t>(std::llround(bytes)));
  c->add_ref(); /* the reference sg_comm_wait_any/_all release, as sg_mailbox_put_async's */
  return c.get();
}

/* ---- --cfg settings SimGrid rejects ----------------------------------------
 * SimGrid declares most of its settings when the engine is created and, while
 * parsing --cfg there (inside simgrid_init(), called from C), throws on an
 * unknown key or a value of the wrong type (an exception that cannot unwind
 * through the C frames: abort, nothing said) or dies on an unknown model
 * name.  Before the engine exists no API knows the keys (is_default() knows
 * only a few), and once it exists it is too late; declaring them early
 * (sg_config_init) would make the engine skip the settings simtrain passes.
 * So each setting is tried in a child process: sg_config_init() declares
 * every key and parses the one setting, and the child reports how it went. */
void sg_config_init(int* argc, char** argv); /* exported by libsimgrid, in no public header */

extern "C" int plat_simgrid_cfg_check(const char* setting, st_err* err)
{
  std::string key = std::string(setting).substr(0, std::string(setting).find(':'));
  int fd[2];
  if (pipe(fd))
    return ST_OK; /* cannot check: SimGrid will say (or abort) */
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  if (pid < 0) {
    close(fd[0]);
    close(fd[1]);
    return ST_OK;
  }
  if (pid == 0) {
    close(fd[0]);
    int devnull = open("/dev/null", O_WRONLY);
    if (devnull >= 0) {
      dup2(devnull, 1);
      dup2(devnull, 2);
    }
    std::string arg = std::string("--cfg=") + setting;
    char a0[] = "simtrain", a1[] = "--log=root.thres:critical";
    char* argv[] = {a0, a1, &arg[0], nullptr};
    int argc = 3;
    int code = 0;
    std::string what;
    try {
      sg_config_init(&argc, argv);
    } catch (const std::out_of_range& e) {
      code = 10;
      what = e.what();
    } catch (const std::exception& e) {
      code = 11;
      what = e.what();
    } catch (...) {
      code = 11;
    }
    what = what.substr(0, what.find('\n'));
    if (write(fd[1], what.data(), what.size()) < 0)
      code = 12;
    _exit(code);
  }
  close(fd[1]);
  char buf[512];
  ssize_t n = 0, got;
  while (n < (ssize_t)sizeof buf - 1 && (got = read(fd[0], buf + n, sizeof buf - 1 - n)) > 0)
    n += got;
  buf[n] = '\0';
  close(fd[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
    return ST_OK;
  if (WIFEXITED(status) && WEXITSTATUS(status) == 10 && !strncmp(buf, "Bad config key", 14))
    return st_err_set(err, ST_EUSAGE, "--cfg '%s': unknown SimGrid setting", setting);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 11 && buf[0])
    return st_err_set(err, ST_EUSAGE, "--cfg '%s': bad value for SimGrid setting '%s': %s", setting,
                      key.c_str(), buf);
  return st_err_set(err, ST_EUSAGE, "--cfg '%s': SimGrid rejects this value of '%s'", setting,
                    key.c_str());
}

/* The route as SimGrid has it, for any cluster (an XML platform's routes are
 * SimGrid's alone): the engine started and the platform built in this
 * process, the route asked of the hosts.  Link kinds are unknown here
 * (PLAT_LINK_KIND_COUNT) and switches not counted. */
extern "C" int plat_route_from_engine(const plat_cluster* c, int src, int dst, plat_route* r,
                                      st_err* err)
{
  std::memset(r, 0, sizeof *r);
  int ends = c->num_gpus + (c->host_memory ? c->num_nodes : 0); /* host memory: host.c */
  if (src < 0 || dst < 0 || src >= ends || dst >= ends)
    return st_err_set(err, ST_EUSAGE, "cluster '%s': GPU %d or %d is outside 0..%d", c->name, src,
                      dst, c->num_gpus - 1);
  int argc = 2;
  char arg0[] = "simtrain", arg1[] = "--log=root.thres:critical";
  char* argv[] = {arg0, arg1, nullptr};
  simgrid_init(&argc, argv);
  std::vector<void*> hosts((size_t)ends);
  int rc = plat_cluster_build(c, hosts.data(), err);
  if (rc)
    return rc;
  try {
    auto* a = static_cast<sg4::Host*>(hosts[(size_t)src]);
    auto* b = static_cast<sg4::Host*>(hosts[(size_t)dst]);
    std::vector<sg4::Link*> links;
    double lat = 0;
    a->route_to(b, links, &lat);
    if (links.size() > PLAT_ROUTE_MAX)
      return st_err_set(err, ST_EINPUT, "cluster '%s': the route gpu-%d -> gpu-%d has %zu links, "
                        "more than %d", c->name, src, dst, links.size(), PLAT_ROUTE_MAX);
    r->n = (int)links.size();
    r->latency_s = lat;
    r->bw_Bps = 0;
    for (int i = 0; i < r->n; i++) {
      std::snprintf(r->links[i].name, sizeof r->links[i].name, "%s", links[(size_t)i]->get_cname());
      r->links[i].kind = PLAT_LINK_KIND_COUNT;
      r->links[i].bw_Bps = links[(size_t)i]->get_bandwidth();
      r->links[i].lat_s = links[(size_t)i]->get_latency();
      r->link_ids[i] = -1;
      if (i == 0 || r->links[i].bw_Bps < r->bw_Bps)
        r->bw_Bps = r->links[i].bw_Bps;
    }
  } catch (const std::exception& ex) {
    return st_err_set(err, ST_EINPUT, "cluster '%s': no route gpu-%d -> gpu-%d: %s", c->name, src,
                      dst, ex.what());
  }
  return ST_OK;
}
