#!/usr/bin/env python3
"""L2 agent heartbeat emulator for the minicloud (runs in .venv-cloud: it imports neutron).

It stands in for neutron-openvswitch-agent or neutron-sriov-nic-agent without Open vSwitch
or SR-IOV hardware:

* reads the agent's own ini files with neutron's own option definitions
  ([ovs] of openvswitch_agent.ini / ml2_conf.ini, or [sriov_nic] of sriov_agent.ini),
* parses them with the same functions the real agents use
  (neutron_lib.placement.utils.parse_*, neutron.agent.common.utils.default_rp_hypervisors,
  neutron.common.utils.validate_rp_bandwidth; for SR-IOV the real SriovNicAgentConfigParser),
  so a configuration the real agent rejects makes the emulator exit 1 with the same message,
* sends the report_state RPC heartbeat with the same payload (start_flag and
  resource_versions on the first report only) every [agent] report_interval seconds
  (or --interval),
* listens to the agent RPC fanout topics like the real agent and, when a port gets bound to
  this host with this agent's vif type, fetches its details and reports it up through
  PluginApi.update_device_list, so the port goes ACTIVE.

Usage:
  agent_emulator.py --kind openvswitch|sriov --host devstack0 \
      --config-file neutron.conf --config-file openvswitch_agent.ini [--log-file F] [--interval 10]
  agent_emulator.py ... --print-config   # parse, print the heartbeat payload as JSON, exit
  agent_emulator.py serve SOCKET          # the fork server (cloud.sh's `agent-forks`): this file's imports
                                          # once, an emulator forked per request (../forks.py start SOCKET
                                          # PIDFILE agent_emulator.py ARGS...), each in a session of its own
"""
import argparse
import json
import os
import queue
import signal
import sys
import threading
import time

from neutron_lib.agent import constants as agent_consts
from neutron_lib.agent import topics
from neutron_lib.api.definitions import portbindings
from neutron_lib import constants as n_const
from neutron_lib import context as n_context
from neutron_lib.placement import utils as place_utils
from neutron_lib.utils import helpers
from oslo_config import cfg
from oslo_log import log as logging
import oslo_messaging

from neutron.agent.common import utils as agent_utils
from neutron.agent.l2 import l2_agent_extensions_manager
from neutron.agent import rpc as agent_rpc
from neutron.api.rpc.callbacks import resources
from neutron.common import config as common_config
from neutron.common import utils as n_utils
from neutron.conf.agent import common as agent_config
from neutron.conf.plugins.ml2 import config as ml2_config

LOG = logging.getLogger('minicloud.agent_emulator')

# What Open vSwitch itself would report through OVSDB (ovs_lib.BaseOVS().capabilities).
FAKE_OVS_CAPABILITIES = {
    'datapath_types': ['netdev', 'system'],
    'iface_types': ['bareudp', 'erspan', 'geneve', 'gre', 'gtpu', 'internal', 'ip6erspan',
                    'ip6gre', 'lisp', 'patch', 'srv6', 'stt', 'system', 'tap', 'vxlan'],
}
HYBRID_FW_DRIVERS = ('iptables_hybrid',
                     'neutron.agent.linux.iptables_firewall.OVSHybridIptablesFirewallDriver')


def _register_common_opts():
    common_config.register_common_config_options()
    agent_config.register_agent_state_opts_helper(cfg.CONF)
    l2_agent_extensions_manager.register_opts(cfg.CONF)
    try:
        ml2_config.register_ml2_plugin_opts(cfg=cfg.CONF)
    except cfg.DuplicateOptError:
        pass


def build_ovs_state(conf):
    """Mirror OVSNeutronAgent.__init__ (neutron 29) for the report_state payload."""
    ovs_conf = conf.OVS
    agent_conf = conf.AGENT
    host = conf.host
    try:
        bridge_mappings = helpers.parse_mappings(ovs_conf.bridge_mappings)
    except ValueError as e:
        raise ValueError("Parsing bridge_mappings failed: %s." % e)
    rp_bandwidths = place_utils.parse_rp_bandwidths(ovs_conf.resource_provider_bandwidths)
    rp_pp_without_direction = place_utils.parse_rp_pp_without_direction(
        ovs_conf.resource_provider_packet_processing_without_direction, host)
    rp_pp_with_direction = place_utils.parse_rp_pp_with_direction(
        ovs_conf.resource_provider_packet_processing_with_direction, host)
    if rp_pp_with_direction and rp_pp_without_direction:
        # same check and message as OVSNeutronAgent._validate_rp_pkt_processing_cfg
        raise ValueError(
            '%s and %s configuration options are mutually exclusive.' %
            (n_const.RP_PP_WITHOUT_DIRECTION, n_const.RP_PP_WITH_DIRECTION))
    br_set = set(bridge_mappings.values())
    n_utils.validate_rp_bandwidth(
        rp_bandwidths, br_set,
        tunnelled_network_rp_name=conf.ml2.tunnelled_network_rp_name)
    rp_inventory_defaults = place_utils.parse_rp_inventory_defaults(
        ovs_conf.resource_provider_inventory_defaults)
    rp_pp_inventory_defaults = place_utils.parse_rp_inventory_defaults(
        ovs_conf.resource_provider_packet_processing_inventory_defaults)
    rp_hypervisors = agent_utils.default_rp_hypervisors(
        ovs_conf.resource_provider_hypervisors,
        {k: [v] for k, v in bridge_mappings.items()},
        default_hypervisor=ovs_conf.resource_provider_default_hypervisor,
        tunnelled_network_rp_name=conf.ml2.tunnelled_network_rp_name,
    )
    tunnel_types = agent_conf.tunnel_types or []
    l2_pop = agent_conf.l2_population
    dvr = agent_conf.enable_distributed_routing
    arp_responder = agent_conf.arp_responder and l2_pop
    if dvr and tunnel_types and not arp_responder:
        arp_responder = True
    if tunnel_types and not ovs_conf.local_ip:
        raise ValueError('Tunneling cannot be enabled without a valid local_ip.')
    hybrid_plug = conf.SECURITYGROUP.firewall_driver in HYBRID_FW_DRIVERS
    return {
        'binary': n_const.AGENT_PROCESS_OVS,
        'host': host,
        'topic': n_const.L2_AGENT_TOPIC,
        'configurations': {
            'bridge_mappings': bridge_mappings,
            n_const.RP_BANDWIDTHS: rp_bandwidths,
            n_const.RP_INVENTORY_DEFAULTS: rp_inventory_defaults,
            n_const.RP_PP_WITHOUT_DIRECTION: rp_pp_without_direction,
            n_const.RP_PP_WITH_DIRECTION: rp_pp_with_direction,
            n_const.RP_PP_INVENTORY_DEFAULTS: rp_pp_inventory_defaults,
            'resource_provider_hypervisors': rp_hypervisors,
            'integration_bridge': ovs_conf.integration_bridge,
            'tunnel_types': tunnel_types,
            'tunneling_ip': ovs_conf.local_ip,
            'l2_population': l2_pop,
            'arp_responder_enabled': arp_responder,
            'enable_distributed_routing': dvr,
            'log_agent_heartbeats': agent_conf.log_agent_heartbeats,
            'extensions': list(conf.agent.extensions),
            'datapath_type': ovs_conf.datapath_type,
            'ovs_capabilities': FAKE_OVS_CAPABILITIES,
            'vhostuser_socket_dir': ovs_conf.vhostuser_socket_dir,
            portbindings.OVS_HYBRID_PLUG: hybrid_plug,
            'baremetal_smartnic': agent_conf.baremetal_smartnic,
            'devices': 0,
            'in_distributed_mode': False,
        },
        'resource_versions': resources.LOCAL_RESOURCE_VERSIONS,
        'agent_type': n_const.AGENT_TYPE_OVS,
        'start_flag': True,
    }


def build_sriov_state(conf):
    """Mirror sriov_nic_agent.main + SriovNicSwitchAgent.__init__ (neutron 29)."""
    from neutron.plugins.ml2.drivers.mech_sriov.agent import sriov_nic_agent
    parser = sriov_nic_agent.SriovNicAgentConfigParser()
    parser.parse()
    return {
        'binary': n_const.AGENT_PROCESS_NIC_SWITCH,
        'host': conf.host,
        'topic': n_const.L2_AGENT_TOPIC,
        'configurations': {
            'device_mappings': parser.device_mappings,
            n_const.RP_BANDWIDTHS: parser.rp_bandwidths,
            n_const.RP_INVENTORY_DEFAULTS: parser.rp_inventory_defaults,
            'resource_provider_hypervisors': parser.rp_hypervisors,
            'extensions': list(conf.agent.extensions),
            'devices': 0,
        },
        'agent_type': n_const.AGENT_TYPE_NIC_SWITCH,
        'resource_versions': resources.LOCAL_RESOURCE_VERSIONS,
        'start_flag': True,
    }


class Emulator:
    VIF_TYPES = {
        'openvswitch': {portbindings.VIF_TYPE_OVS, portbindings.VIF_TYPE_VHOST_USER},
        'sriov': {portbindings.VIF_TYPE_HW_VEB, portbindings.VIF_TYPE_HOSTDEV_PHY},
    }

    def __init__(self, kind, conf, state, interval, status_file=None):
        # The RPC versions of the real agents' endpoints (OVSNeutronAgent 1.7,
        # SriovNicSwitchRpcCallbacks 1.6): binding_activate/deactivate (1.5) need them.
        self.target = oslo_messaging.Target(version='1.7' if kind == 'openvswitch' else '1.6')
        self.status_file = status_file
        self.kind = kind
        self.conf = conf
        self.host = conf.host
        self.state = state
        self.interval = interval
        self.agent_id = ('ovs-agent-%s' if kind == 'openvswitch' else 'nic-switch-agent.%s') % self.host
        self.context = n_context.get_admin_context_without_session()
        self.state_rpc = agent_rpc.PluginReportStateAPI(topics.REPORTS)
        self.plugin_rpc = agent_rpc.PluginApi(topics.PLUGIN)
        self.stop_event = threading.Event()
        self.ports_up = set()
        self.todo = queue.Queue()
        self.first_report_done = False

    # -- RPC endpoint methods (called by neutron's agent notifier fanouts) --------------
    def port_update(self, context, **kwargs):
        port = kwargs.get('port') or {}
        self._maybe_up(port)

    def port_delete(self, context, **kwargs):
        self.ports_up.discard(kwargs.get('port_id'))

    def network_update(self, context, **kwargs):
        pass

    def network_delete(self, context, **kwargs):
        pass

    def binding_activate(self, context, **kwargs):
        # A live migration activates the port's inactive binding for the destination host; the
        # real agent then treats the port as updated and reports it up from there.
        if kwargs.get('host') == self.host and kwargs.get('port_id'):
            LOG.info('binding of port %s activated on %s: reporting it up', kwargs['port_id'], self.host)
            self.ports_up.discard(kwargs['port_id'])
            self.todo.put(kwargs['port_id'])

    def binding_deactivate(self, context, **kwargs):
        pass

    def _maybe_up(self, port):
        pid = port.get('id')
        if not pid:
            return
        if port.get(portbindings.HOST_ID) != self.host:
            return
        if port.get(portbindings.VIF_TYPE) not in self.VIF_TYPES[self.kind]:
            return
        if port.get('status') == n_const.PORT_STATUS_ACTIVE and pid in self.ports_up:
            return
        LOG.info('port %s bound to %s (%s): reporting it up', pid, self.host,
                 port.get(portbindings.VIF_TYPE))
        self.todo.put(pid)

    def _device_worker(self):
        while not self.stop_event.is_set():
            try:
                pid = self.todo.get(timeout=1)
            except queue.Empty:
                continue
            try:
                details = self.plugin_rpc.get_devices_details_list_and_failed_devices(
                    self.context, [pid], self.agent_id, self.host)
                LOG.debug('device details for %s: %s', pid, details)
                if details.get('failed_devices'):
                    LOG.warning('get_devices_details failed for %s', pid)
                ret = self.plugin_rpc.update_device_list(
                    self.context, [pid], [], self.agent_id, self.host)
                LOG.info('update_device_list(up=[%s]) -> %s', pid, ret)
                if pid in ret.get('devices_up', []):
                    self.ports_up.add(pid)
                    self.state['configurations']['devices'] = len(self.ports_up)
            except Exception:
                LOG.exception('reporting port %s up failed', pid)

    # -- heartbeat ---------------------------------------------------------------------
    def report_state(self):
        try:
            if self.kind == 'openvswitch':
                status = self.state_rpc.report_state(self.context, self.state, True)
            else:
                status = self.state_rpc.report_state(self.context, self.state)
            LOG.debug('report_state -> %s', status)
            if status == agent_consts.AGENT_REVIVED:
                LOG.info('Agent has just been revived.')
            # like the real agents: resource_versions and start_flag go with the first report only
            self.state.pop('resource_versions', None)
            self.state.pop('start_flag', None)
            if not self.first_report_done:
                self.first_report_done = True
                LOG.info('first heartbeat sent: %s',
                         json.dumps(self.state['configurations'], sort_keys=True, default=str))
                if self.status_file:
                    tmp = self.status_file + '.tmp'
                    with open(tmp, 'w') as f:
                        json.dump({'reported_at': time.time(), 'agent_type': self.state['agent_type'],
                                   'host': self.host, 'configurations': self.state['configurations']},
                                  f, sort_keys=True, default=str, indent=1)
                    os.replace(tmp, self.status_file)
        except Exception:
            LOG.exception('Failed reporting state!')

    def run(self):
        endpoints = [self]
        consumers = [[topics.PORT, topics.UPDATE],
                     [topics.PORT, topics.DELETE],
                     [topics.NETWORK, topics.UPDATE],
                     [topics.PORT_BINDING, topics.DEACTIVATE],
                     [topics.PORT_BINDING, topics.ACTIVATE]]
        connection = agent_rpc.create_consumers(endpoints, topics.AGENT, consumers,
                                                start_listening=False)
        connection.consume_in_threads()
        worker = threading.Thread(target=self._device_worker, daemon=True)
        worker.start()
        while not self.stop_event.is_set():
            self.report_state()
            self.stop_event.wait(self.interval)
        # A real agent just dies too; do not let RPC consumer threads delay the exit.
        closer = threading.Thread(target=connection.close, daemon=True)
        closer.start()
        closer.join(2)
        logging.shutdown() if hasattr(logging, 'shutdown') else None
        os._exit(0)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--kind', required=True, choices=['openvswitch', 'sriov'])
    ap.add_argument('--host', default=None, help='agent host (default: [DEFAULT] host)')
    ap.add_argument('--hypervisor-hostname', default=None,
                    help='what the emulated host answers for its own hostname '
                         '(neutron.agent.common.utils.get_hypervisor_hostname); this is the '
                         'default of resource_provider_hypervisors when the ini does not set '
                         'resource_provider_default_hypervisor. Default: the agent host.')
    ap.add_argument('--interval', type=float, default=None,
                    help='heartbeat period in s (default: [agent] report_interval)')
    ap.add_argument('--status-file', default=None,
                    help='after the first successful heartbeat, write {"reported_at": epoch, '
                         '"agent_type", "host", "configurations"} as JSON here')
    ap.add_argument('--print-config', action='store_true',
                    help='print the heartbeat payload as JSON and exit')
    args, rest = ap.parse_known_args(argv)

    _register_common_opts()
    if args.kind == 'openvswitch':
        from neutron.conf.plugins.ml2.drivers import ovs_conf
        ovs_conf.register_ovs_agent_opts()
    else:
        from neutron.plugins.ml2.drivers.mech_sriov.agent.common import config  # noqa: F401
    from neutron.conf.agent import securitygroups_rpc
    securitygroups_rpc.register_securitygroups_opts()

    common_config.init(rest)
    if args.host:
        cfg.CONF.set_override('host', args.host)
    # The emulated agent runs "on" host cfg.CONF.host: its libvirt-style hostname (used by
    # default_rp_hypervisors) is that host's, not this machine's.
    hv_name = args.hypervisor_hostname or cfg.CONF.host
    agent_utils.get_hypervisor_hostname = lambda: hv_name
    if not args.print_config:
        common_config.setup_logging()

    try:
        if args.kind == 'openvswitch':
            state = build_ovs_state(cfg.CONF)
        else:
            state = build_sriov_state(cfg.CONF)
    except ValueError as e:
        LOG.error('%s agent terminated!', e)
        print('%s agent terminated!' % e, file=sys.stderr)
        return 1

    if args.print_config:
        print(json.dumps(state, sort_keys=True, default=str, indent=1))
        return 0

    interval = args.interval or cfg.CONF.AGENT.report_interval or 10
    emu = Emulator(args.kind, cfg.CONF, state, interval, args.status_file)

    def _stop(signum, frame):
        LOG.info('signal %s: stopping', signum)
        emu.stop_event.set()
    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    LOG.info('%s emulator for host %s, heartbeat every %ss', args.kind, cfg.CONF.host, interval)
    emu.run()
    return 0


def serve(path):
    """The emulators forked from this process, which imported what every emulator imports at its start (this
    file's imports; not the kind's own option modules, which register options as they are imported: each child
    imports its kind's as a fresh emulator does). A child starts its own session (as cloud.sh's ``start`` does
    with setsid, so that ``stop`` kills its process group) and runs ``main`` with its request's argv, streams,
    directory and environment (tests/support/forks.py); its parent is then init, as with ``setsid CMD &``, and its
    command line (setproctitle) the one it would have had without the server."""
    support = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    sys.path.insert(0, support)  # forks.py, then out of the path again: what the children import lazily is as before
    import forks

    sys.path.remove(support)

    def work(request):  # in a session of its own, titled as its command (forks.serve's detach)
        sys.argv = list(request['argv'])
        sys.exit(main(sys.argv[1:]))

    forks.serve(path, work, detach=True)


if __name__ == '__main__':
    if sys.argv[1:2] == ['serve'] and len(sys.argv) == 3:
        serve(sys.argv[2])
    sys.exit(main())
