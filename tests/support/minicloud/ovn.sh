# The mini-cloud's ML2/OVN variant (MINICLOUD_OVN=1), sourced by cloud.sh after the library (../lib/common.sh).
# shellcheck shell=bash disable=SC2034  # OVN_NB, OVN_SB: read by render (the templates ml2_conf-ovn.ini.in, env-ovn.in)
#
# OVN from Debian (ovn-central, ovn-host, openvswitch-switch), every daemon run by hand with its own files
# under $S/ovn (the packaged services are never used):
#   central: the northbound and southbound ovsdb-servers (tcp 127.0.0.1:6641 / 6642) and ovn-northd;
#   each fake compute HOST: its own Open vSwitch database (an ovsdb-server on $S/ovn/HOST/db.sock),
#   ovs-vswitchd on the userspace datapath (--disable-system, bridges of datapath_type netdev: no kernel
#   module) so that ovn-controller can program br-int and keep its chassis alive, and ovn-controller,
#   which copies external_ids:ovn-bridge-mappings / ovn-cms-options into its southbound Chassis row.
# Neutron runs ML2/OVN (mechanism_drivers = ovn); with the placement plugin, its OVN placement extension
# reports the bandwidth in the chassis options. No L2 agent emulator runs.

OVN_DIR=$S/ovn
OVN_NB_PORT=6641
OVN_SB_PORT=6642
OVN_NB=tcp:$IP:$OVN_NB_PORT
OVN_SB=tcp:$IP:$OVN_SB_PORT
OVN_SCHEMAS=/usr/share/ovn
OVS_SCHEMA=/usr/share/openvswitch/vswitch.ovsschema

ovn_installed() { command -v ovn-northd >/dev/null && command -v ovn-controller >/dev/null && command -v ovs-vswitchd >/dev/null; }

# the Open vSwitch database of HOST, and ovs-vsctl on it (--no-wait: nothing waits on ovs-vswitchd)
ovs_db_of() { echo "unix:$OVN_DIR/$1/db.sock"; }
vsctl_on() { local h=$1; shift; ovs-vsctl --db="$(ovs_db_of "$h")" --no-wait --timeout=20 "$@"; }

# The chassis options each compute starts with: seed 003's bandwidth (as the OVS emulator's ini) in
# ovn-cms-options; devstack0 is also a gateway chassis (an option minbw must keep). MINICLOUD_OVN_CMS /
# MINICLOUD_OVN_CMS_1 replace them (devstack0 / devstack1).
ovn_cms_of() {
    local h=$1 gw=""
    [ "$h" = "$HOSTNAME_NOVA" ] && gw="enable-chassis-as-gw,"
    local default="${gw}resource_provider_bandwidths=br-test:1500:1500;br-ex::1,resource_provider_hypervisors=br-test:$h;br-ex:$h"
    if [ "$h" = "$HOSTNAME_NOVA" ]; then echo "${MINICLOUD_OVN_CMS:-$default}"; else echo "${MINICLOUD_OVN_CMS_1:-$default}"; fi
}

# what ML2/OVN adds to ml2_conf.ini (cloud.sh writes the rest, with mechanism_drivers = ovn)
ovn_ml2_sections() { render "$T/ml2_conf-ovn.ini.in"; }

ovn_start_central() {
    local d=$OVN_DIR/central
    mkdir -p "$d"
    ovsdb-tool create "$d/nb.db" "$OVN_SCHEMAS/ovn-nb.ovsschema"
    ovsdb-tool create "$d/sb.db" "$OVN_SCHEMAS/ovn-sb.ovsschema"
    local db
    for db in nb sb; do
        local port=$OVN_NB_PORT
        [ $db = sb ] && port=$OVN_SB_PORT
        start "ovn-$db" ovsdb-server "$d/$db.db" --remote="ptcp:$port:$IP" --remote="punix:$d/$db.sock" \
            --unixctl="$d/$db.ctl" --log-file="$LOG/ovn-$db.log"
    done
    start ovn-northd env OVN_RUNDIR="$d" ovn-northd --ovnnb-db="unix:$d/nb.sock" --ovnsb-db="unix:$d/sb.sock" \
        --unixctl="$d/northd.ctl" --log-file="$LOG/ovn-northd.log"
}

# ovn_start_compute HOST N: HOST's Open vSwitch database, bridges, ovs-vswitchd and ovn-controller
ovn_start_compute() {
    local h=$1 n=$2 d=$OVN_DIR/$1
    mkdir -p "$d"
    ovsdb-tool create "$d/conf.db" "$OVS_SCHEMA"
    start "ovs-db-$h" env OVS_RUNDIR="$d" ovsdb-server "$d/conf.db" --remote="punix:$d/db.sock" \
        --unixctl="$d/ovsdb.ctl" --log-file="$LOG/ovs-db-$h.log"
    wait_for "$h: its Open vSwitch database" 20 "ovs-db-$h" test -S "$d/db.sock"
    vsctl_on "$h" init
    # ovn-encap-ip: one per chassis (the southbound Encap table is unique on type and ip)
    vsctl_on "$h" set Open_vSwitch . external_ids:system-id="chassis-$h" external_ids:hostname="$h" \
        external_ids:ovn-remote="$OVN_SB" external_ids:ovn-encap-type=geneve external_ids:ovn-encap-ip="127.0.0.$((n + 2))" \
        external_ids:ovn-bridge-mappings="physnet0:br-test,public:br-ex" \
        "external_ids:ovn-cms-options=\"$(ovn_cms_of "$h")\""
    local br
    for br in br-int br-test br-ex; do
        vsctl_on "$h" --may-exist add-br "$br" -- set Bridge "$br" datapath_type=netdev
    done
    vsctl_on "$h" set Bridge br-int fail-mode=secure
    # its own network namespace: the userspace datapath creates a tap device named ovs-netdev, one per namespace
    start "ovs-vswitchd-$h" unshare --net env OVS_RUNDIR="$d" ovs-vswitchd "unix:$d/db.sock" --disable-system \
        --unixctl="$d/vswitchd.ctl" --log-file="$LOG/ovs-vswitchd-$h.log"
    start "ovn-controller-$h" env OVN_RUNDIR="$d" OVS_RUNDIR="$d" ovn-controller "unix:$d/db.sock" \
        --log-file="$LOG/ovn-controller-$h.log"
}

ovn_start() {
    ovn_installed || die "OVN is not installed (ovn-central, ovn-host, openvswitch-switch): cloud.sh install"
    ovn_start_central
    wait_for "OVN southbound database" 20 "ovn-sb" ovn-sbctl --db="$OVN_SB" --timeout=3 show
    local h n=0
    for h in "${HOSTS[@]}"; do
        ovn_start_compute "$h" $n
        n=$((n + 1))
    done
}

# the hosts' chassis in the southbound database, with the cms options they were given
ovn_chassis_registered() {
    local h
    for h in "${HOSTS[@]}"; do
        ovn-sbctl --db="$OVN_SB" --timeout=3 --bare --columns=other_config find Chassis hostname="$h" \
            | grep -q "ovn-cms-options" || return 1
    done
}

ovn_services() {
    local h
    echo ovn-nb ovn-sb ovn-northd
    for h in "${HOSTS[@]}"; do echo "ovs-db-$h ovs-vswitchd-$h ovn-controller-$h"; done
}

# wait_ovn [TIMEOUT]: the chassis in the southbound database, Neutron's OVN Controller agents alive; with the
# placement plugin, each host's bandwidth providers in Placement
wait_ovn() {
    local controllers
    controllers=$(for h in "${HOSTS[@]}"; do printf 'ovn-controller-%s ' "$h"; done)
    wait_for "OVN chassis of ${HOSTS[*]} in the southbound database" 60 "$controllers" ovn_chassis_registered
    wait_check "OVN Controller agents alive (${HOSTS[*]})" "${1:-120}" "neutron-api $controllers" ovn-agents
    if [ "$PLACEMENT_PLUGIN" = 1 ]; then
        wait_check "OVN bandwidth providers in placement (${HOSTS[*]})" 90 "neutron-periodic neutron-api" \
            ovn-providers
    fi
}

# Neutron 29 reports a chassis's bandwidth when its Chassis row reaches neutron-server's API worker as a
# create event (at the worker's start) and when the bandwidth options change, never again: a chassis
# whose compute node provider does not exist yet at that moment is skipped for good. neutron-server
# starts before nova-compute here, so with the placement plugin the API worker restarts once the
# compute node providers exist (what a deployment gets by starting neutron-server after the computes).
ovn_after_roots() {
    [ "$PLACEMENT_PLUGIN" = 1 ] || return 0
    say "restarting neutron-api: Neutron's OVN extension reports each chassis once at start (roots exist now)"
    stop neutron-api 10
    start_api neutron-api
    wait_check "neutron API" 90 "neutron-api" network-api
}

# cloud.sh neutron-placement 0|1: neutron-server restarted with the placement service plugin off / on
do_neutron_placement() {
    local want=${1:?usage: cloud.sh neutron-placement 0|1}
    { [ -d "$RUN" ] && alive neutron-api; } || die "minicloud is not running"
    load_mode
    [ "$OVN" = 1 ] || die "neutron-placement is for the OVN variant (MINICLOUD_OVN=1): the agent emulators report by heartbeat"
    local plugins=qos,segments
    [ "$want" = 1 ] && plugins=qos,segments,placement
    sed -i "s/^service_plugins = .*/service_plugins = $plugins/" "$ETC/neutron/neutron.conf"
    say "restarting neutron-server with service_plugins = $plugins"
    stop neutron-api 10 & stop neutron-rpc 10 & stop neutron-periodic 10 &
    wait
    start_neutron
    PLACEMENT_PLUGIN=$want
    save_mode
    wait_check "neutron API" 90 "neutron-api neutron-rpc neutron-periodic" network-api
    wait_ovn 120
}
