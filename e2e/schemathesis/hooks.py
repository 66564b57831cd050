"""Values for the formats of ours the OpenAPI document names where no JSON Schema keyword can say
the rule (services/api-gateway/src/contract/bodies.rs): schemathesis draws positive examples of
`git-remote`, `git-ref`, `egress-rule` and `ip-network` from these strategies, each producing
only what the service's check accepts (see the Rust checks named beside each)."""

from __future__ import annotations

import ipaddress

import schemathesis
from hypothesis import strategies as st

_label = st.from_regex(r"[a-z][a-z0-9]{0,10}", fullmatch=True)
_segment = st.from_regex(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,15}", fullmatch=True).filter(
    lambda s: s != ".." and not s.endswith(".lock"))

# services/deployer/src/git/url.rs: https://host/path, ssh://host/path, user@host:path.
_host = st.lists(_label, min_size=1, max_size=3).map(".".join)
_path = st.lists(_segment, min_size=1, max_size=3).map("/".join)
git_remote = st.one_of(
    st.builds(lambda h, p: f"https://{h}/{p}", _host, _path),
    st.builds(lambda h, p: f"ssh://git@{h}/{p}", _host, _path),
    st.builds(lambda h, p: f"git@{h}:{p}", _host, _path),
)

# services/deployer/src/git/refs.rs: git check-ref-format's rules, not starting with `-`.
_ref_part = st.from_regex(r"[A-Za-z0-9_][A-Za-z0-9_-]{0,15}", fullmatch=True)
git_ref = st.lists(_ref_part, min_size=1, max_size=3).map("/".join)

# libs/node-contract/src/egress.rs: a port, a destination, or destination:port.
_port = st.integers(min_value=1, max_value=65535).map(str)
_network = st.builds(lambda a, p: str(ipaddress.ip_network(f"{ipaddress.IPv4Address(a)}/{p}", strict=False)),
                     st.integers(0, 2**32 - 1), st.integers(8, 32))
egress_rule = st.one_of(
    _port,
    _host,
    st.builds(lambda h, p: f"{h}:{p}", st.one_of(_host, _network), _port),
)

# services/zone-manager/src/validate.rs: IPv4/IPv6 CIDRs or bare addresses.
_v6 = st.builds(lambda a, p: str(ipaddress.ip_network(f"{ipaddress.IPv6Address(a)}/{p}", strict=False)),
                st.integers(0, 2**128 - 1), st.integers(16, 128))
ip_network = st.one_of(_network, _v6, st.ip_addresses().map(str))

schemathesis.openapi.format("git-remote", git_remote)
schemathesis.openapi.format("git-ref", git_ref)
schemathesis.openapi.format("egress-rule", egress_rule)
schemathesis.openapi.format("ip-network", ip_network)
