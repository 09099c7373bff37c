# The real neutron-openvswitch-agent on the computes named in MINICLOUD_REAL_OVS_AGENT (in place of the OVS agent
# emulator there), sourced by cloud.sh after the library (../lib/common.sh).
# shellcheck shell=bash disable=SC2034  # the upper-case locals: read by render (templates/openvswitch_agent-real.ini.in)
#
# Each such HOST gets, under $S/ovs/HOST, what a compute running ML2/OVS has:
#   - its own Open vSwitch: an ovsdb-server (unix socket db.sock) and ovs-vswitchd on the userspace datapath
#     (--disable-system, bridges of datapath_type netdev: no kernel module), in a network namespace of its own,
#     named after the state dir and the host (`ip netns`: the fake hypervisor makes its VMs' TAP devices there,
#     and ovs-vswitchd's HTB classes are read there);
#   - the physical bridges of the host's OVS agent ini (bridge_mappings), each with a TAP device as its NIC
#     (eth1, eth2, ... in the order of the mappings; TAP devices and HTB qdiscs work on these machines, dummy and
#     veth links do not);
#   - neutron-openvswitch-agent (neutron 29.0.0) with the ini's bridge mappings, bandwidths and extensions (qos)
#     and what running here needs (templates/openvswitch_agent-real.ini.in: the host's database, the userspace
#     datapath, root_helper without sudo, the OpenFlow port). It runs in the cloud's namespace (RabbitMQ is there);
#     its OpenFlow listener (tcp 127.0.0.1:$OF_PORT) reaches ovs-vswitchd's namespace through two socat relays
#     joined by a unix socket (process ovs-of-HOST);
#   - nova-compute with the fake driver's os-vif variant (os_vif_driver.py): spawn and destroy plug and unplug the
#     VIFs through os-vif on that database, as nova-compute's libvirt driver does.
# The agent is process agent-ovs[-HOST] as the emulator is, so restart-agents / stop-agents act on it.

REAL_OVS=${MINICLOUD_REAL_OVS_AGENT:-}
OVS_AGENT_DIR=$S/ovs

is_real_ovs() { [[ " $REAL_OVS " == *" $1 "* ]]; }
real_ovs_hosts() { local h; for h in "${HOSTS[@]}"; do is_real_ovs "$h" && echo "$h"; done; return 0; }
real_ovs_db_of() { echo "unix:$OVS_AGENT_DIR/$1/db.sock"; }
# the host's network namespace: unique per state dir (several clouds on one machine), at most 15+ characters
real_ovs_netns() { echo "minicloud-$(printf '%s' "$S" | sha256sum | cut -c1-8)-$1"; }
real_ovs_of_port() { [ "$1" = "$HOSTNAME_NOVA" ] && echo 16633 || echo 16634; }
real_vsctl() { local h=$1; shift; ovs-vsctl --db="$(real_ovs_db_of "$h")" --timeout=20 "$@"; }

check_real_ovs_hosts() {
    local h
    for h in $REAL_OVS; do
        [[ " ${HOSTS[*]} " == *" $h "* ]] || die "MINICLOUD_REAL_OVS_AGENT names $h, not a compute of this cloud (${HOSTS[*]})"
        [ "$h" = "$HOST1" ] && [ "$SPARE" = 1 ] && die "MINICLOUD_REAL_OVS_AGENT: $h is a spare here (MINICLOUD_SPARE_COMPUTE=1)"
        # one OpenFlow relay port each (real_ovs_of_port), one namespace each (real_ovs_stop_netns)
        [ "$h" = "$HOSTNAME_NOVA" ] || [ "$h" = "$HOST1" ] || die "MINICLOUD_REAL_OVS_AGENT runs on devstack0 and devstack1 only, not $h"
    done
    [ -z "$REAL_OVS" ] || [ "$OVN" != 1 ] || die "MINICLOUD_REAL_OVS_AGENT is for ML2/OVS, not the OVN variant"
    return 0
}

# the agent's configuration beside the host's ini (rendered by write_configs)
write_real_ovs_agent_conf() {
    local h=$1 REAL_HOST=$1 OVS_DB OF_PORT PRIVSEP_PATH=$VENV/bin:/usr/sbin:/usr/bin:/sbin:/bin OVS_RUNDIR=$OVS_AGENT_DIR/$1
    OVS_DB=$(real_ovs_db_of "$h"); OF_PORT=$(real_ovs_of_port "$h")
    render "$T/openvswitch_agent-real.ini.in" >"$ETC/neutron/openvswitch_agent-real-$h.ini"
}

# nova-compute's additions on a real-agent host: the os-vif variant of its fake driver, os-vif's OVSDB and its
# privileged helper run in the host's namespace (os-vif sets the VM TAP's MTU there)
write_real_ovs_nova_conf() {
    local h=$1 OVS_DB NETNS conf_files="--config-file $ETC/nova/nova.conf"
    OVS_DB=$(real_ovs_db_of "$h"); NETNS=$(real_ovs_netns "$h")
    [ "$h" = "$HOSTNAME_NOVA" ] || conf_files+=" --config-file $ETC/nova/nova-compute-$h.conf"
    local PRIVSEP_HELPER="ip netns exec $NETNS $VENV/bin/privsep-helper $conf_files --config-file $ETC/nova/nova-compute-os-vif-$h.conf"
    local COMPUTE_DRIVER=fake.FakeLiveMigrateDriverOsVif
    [ "$SRIOV_COMPUTE" = 1 ] && COMPUTE_DRIVER=fake.FakeLiveMigrateDriverWithPciResourcesOsVif
    render "$T/nova-compute-os-vif.conf.in" >"$ETC/nova/nova-compute-os-vif-$h.conf"
}

# the bridge mappings' bridges of an ini (oslo.config's file parser, as the agent reads it)
ini_bridges() {
    "$PY" - "$1" <<'EOF'
import sys
from oslo_config import iniparser
class P(iniparser.BaseParser):
    section, found = None, []
    def new_section(self, section): self.section = section.lower()
    def assignment(self, key, value):
        if self.section == "ovs" and key == "bridge_mappings":
            self.found = [m.split(":", 1)[1].strip() for m in ",".join(value).split(",") if ":" in m]
    def parse_exc(self, msg, lineno, line=None): raise SystemExit(f"{sys.argv[1]}:{lineno}: {msg}")
p = P()
p.parse(open(sys.argv[1]))
print(" ".join(dict.fromkeys(p.found)))
EOF
}

# real_ovs_bridges HOST: the physical bridges of HOST's ini, each with its TAP NIC (idempotent: restart-agents
# after an ini change adds the new ones)
real_ovs_bridges() {
    local h=$1 ns br n=0 nic bridges
    ns=$(real_ovs_netns "$h")
    bridges=$(ini_bridges "$(ovs_ini_of "$h")") || die "cannot read the bridge mappings of $(ovs_ini_of "$h")"
    for br in $bridges; do
        n=$((n + 1)); nic=eth$n
        if ! ip -n "$ns" link show "$nic" >/dev/null 2>&1; then
            ip -n "$ns" tuntap add "$nic" mode tap && ip -n "$ns" link set "$nic" up \
                || die "$h: cannot make the TAP device $nic in namespace $ns"
        fi
        real_vsctl "$h" --may-exist add-br "$br" -- set Bridge "$br" datapath_type=netdev \
            -- --may-exist add-port "$br" "$nic" >/dev/null || die "$h: cannot make bridge $br with NIC $nic"
    done
}

# real_ovs_start HOST: its namespace, database, ovs-vswitchd and the OpenFlow relays
real_ovs_start() {
    local h=$1 d=$OVS_AGENT_DIR/$1 ns port
    ns=$(real_ovs_netns "$h"); port=$(real_ovs_of_port "$h")
    command -v ovs-vswitchd >/dev/null && command -v socat >/dev/null \
        || die "Open vSwitch or socat missing (openvswitch-switch, socat): cloud.sh install"
    mkdir -p "$d"
    ip netns del "$ns" 2>/dev/null || true
    ip netns add "$ns" && ip -n "$ns" link set lo up || die "$h: cannot make the network namespace $ns"
    ovsdb-tool create "$d/conf.db" "$OVS_SCHEMA"
    start "ovs-db-$h" env OVS_RUNDIR="$d" ovsdb-server "$d/conf.db" --remote="punix:$d/db.sock" \
        --unixctl="$d/ovsdb.ctl" --log-file="$LOG/ovs-db-$h.log"
    wait_for "$h: its Open vSwitch database" 20 "ovs-db-$h" test -S "$d/db.sock"
    real_vsctl "$h" --no-wait init
    start "ovs-vswitchd-$h" nsenter --net="/run/netns/$ns" env OVS_RUNDIR="$d" ovs-vswitchd "unix:$d/db.sock" \
        --disable-system --unixctl="$d/vswitchd.ctl" --log-file="$LOG/ovs-vswitchd-$h.log"
    # the switch connects to tcp:127.0.0.1:PORT in its namespace; the agent listens there in the cloud's
    start "ovs-of-$h" bash -c "socat UNIX-LISTEN:$d/of.sock,fork,unlink-early TCP:127.0.0.1:$port &
        nsenter --net=/run/netns/$ns socat TCP-LISTEN:$port,bind=127.0.0.1,reuseaddr,fork UNIX-CONNECT:$d/of.sock &
        wait"
    wait_for "$h: ovs-vswitchd" 20 "ovs-vswitchd-$h" test -S "$d/vswitchd.ctl"
    real_ovs_bridges "$h"
}

real_ovs_stop_netns() {  # the namespaces of this state dir's real-agent hosts (their TAP devices go with them)
    local h
    for h in "$HOSTNAME_NOVA" "$HOST1"; do ip netns del "$(real_ovs_netns "$h")" 2>/dev/null || true; done
    return 0
}

# start_real_ovs_agent HOST: neutron-openvswitch-agent as process agent-ovs[-HOST]
start_real_ovs_agent() {
    local h=$1 x
    x=$(sfx "$h")
    real_ovs_bridges "$h"
    rm -f "$RUN/agent-ovs$x.json"
    # where this run's lines start in its log (appended to by every run): wait_agents waits for its first loop there
    stat -c %s "$LOG/agent-ovs$x.log" 2>/dev/null >"$RUN/agent-ovs$x.log-start" || echo 0 >"$RUN/agent-ovs$x.log-start"
    start "agent-ovs$x" env OVS_RUNDIR="$OVS_AGENT_DIR/$h" "$VENV/bin/neutron-openvswitch-agent" --config-file "$ETC/neutron/neutron.conf" \
        --config-file "$(ovs_ini_of "$h")" --config-file "$ETC/neutron/openvswitch_agent-real-$h.ini" \
        --log-file "$LOG/agent-ovs$x.log"
}

# real_ovs_agent_looped HOST: the agent's run has been through its first loop (every port on br-int handled)
real_ovs_agent_looped() {
    local x
    x=$(sfx "$1")
    tail -c +"$(( $(cat "$RUN/agent-ovs$x.log-start") + 1 ))" "$LOG/agent-ovs$x.log" 2>/dev/null \
        | grep -q "rpc_loop - iteration:0 completed"
}
