//! Which zone and worker a new session goes to: the pinned zone, or healthy zones by weight
//! with the rest as failover, each filtered by the zone's IP rules.

use std::net::IpAddr;

use rand::Rng;

use crate::directory::{Admission, Route, WorkerRoute, ZoneRoute};

#[derive(Debug, PartialEq, Eq)]
pub enum Refusal {
    /// The pinned zone is not part of the environment.
    UnknownZone(String),
    /// The client's address is outside the IP rules of every candidate zone.
    Forbidden,
    /// The zone's IP rules cannot be read (the pinned one, or every zone the client's address
    /// was not refused by): served to no one.
    UnreadableRules(String),
    /// No candidate zone has a ready worker.
    NoWorkers,
}

/// Zones to try, in order: the pinned one alone, or every allowed zone with workers, the
/// first drawn by weight and the others after it by descending weight.
pub fn zones<'a>(
    route: &'a Route,
    pinned: Option<&str>,
    client: IpAddr,
) -> Result<Vec<&'a ZoneRoute>, Refusal> {
    if let Some(pinned) = pinned {
        let zone = route
            .zones
            .iter()
            .find(|z| z.zone == pinned)
            .ok_or_else(|| Refusal::UnknownZone(pinned.to_owned()))?;
        match zone.admits(client) {
            Admission::Allowed => {}
            Admission::Forbidden => return Err(Refusal::Forbidden),
            Admission::Unreadable => return Err(Refusal::UnreadableRules(zone.zone.clone())),
        }
        if zone.workers.is_empty() {
            return Err(Refusal::NoWorkers);
        }
        return Ok(vec![zone]);
    }
    let permitted: Vec<&ZoneRoute> =
        route.zones.iter().filter(|z| z.admits(client) == Admission::Allowed).collect();
    if permitted.is_empty() && !route.zones.is_empty() {
        let unreadable = route.zones.iter().find(|z| z.admits(client) == Admission::Unreadable);
        return Err(match unreadable {
            Some(zone) => Refusal::UnreadableRules(zone.zone.clone()),
            None => Refusal::Forbidden,
        });
    }
    let mut candidates: Vec<&ZoneRoute> =
        permitted.into_iter().filter(|z| !z.workers.is_empty()).collect();
    if candidates.is_empty() {
        return Err(Refusal::NoWorkers);
    }
    candidates.sort_by_key(|z| std::cmp::Reverse(zone_weight(z)));
    let weights: Vec<u64> = candidates.iter().map(|z| zone_weight(z).max(1)).collect();
    let first = draw(&weights);
    let chosen = candidates.remove(first);
    candidates.insert(0, chosen);
    Ok(candidates)
}

fn zone_weight(zone: &ZoneRoute) -> u64 {
    zone.workers.iter().map(|w| u64::from(w.weight)).sum()
}

/// Workers of a zone to try, the first drawn by weight.
pub fn workers(zone: &ZoneRoute) -> Vec<&WorkerRoute> {
    let mut workers: Vec<&WorkerRoute> = zone.workers.iter().collect();
    let weights: Vec<u64> = workers.iter().map(|w| u64::from(w.weight).max(1)).collect();
    let first = draw(&weights);
    let chosen = workers.remove(first);
    workers.insert(0, chosen);
    workers
}

fn draw(weights: &[u64]) -> usize {
    let total: u64 = weights.iter().sum();
    let mut pick = rand::thread_rng().gen_range(0..total.max(1));
    for (i, w) in weights.iter().enumerate() {
        if pick < *w {
            return i;
        }
        pick -= w;
    }
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn zone(name: &str, rules: &[&str], weights: &[u32]) -> ZoneRoute {
        ZoneRoute {
            hosting_only: Vec::new(),
            zone: name.into(),
            ip_allow: rules.iter().map(|r| r.parse().unwrap()).collect(),
            unparsable_ip_rules: Vec::new(),
            workers: weights
                .iter()
                .enumerate()
                .map(|(i, w)| WorkerRoute {
                    id: format!("{name}-{i}"),
                    address: format!("{name}:{i}"),
                    local: None,
                    weight: *w,
                })
                .collect(),
        }
    }

    #[test]
    fn pinned_zone_and_its_rules() {
        let route = Route { zones: vec![zone("a", &["10.0.0.0/8"], &[1]), zone("b", &[], &[1])] };
        let inside: IpAddr = "10.1.1.1".parse().unwrap();
        let outside: IpAddr = "192.0.2.1".parse().unwrap();
        assert_eq!(zones(&route, Some("a"), inside).unwrap()[0].zone, "a");
        assert_eq!(zones(&route, Some("a"), outside), Err(Refusal::Forbidden));
        assert_eq!(zones(&route, Some("c"), inside), Err(Refusal::UnknownZone("c".into())));
        let unpinned = zones(&route, None, outside).unwrap();
        assert_eq!(unpinned.len(), 1, "zone a excluded for an outside client");
        assert_eq!(unpinned[0].zone, "b");
    }

    #[test]
    fn weights_shape_the_draw_and_failover_keeps_the_rest() {
        let route = Route {
            zones: vec![zone("a", &[], &[90]), zone("b", &[], &[10]), zone("c", &[], &[])],
        };
        let client: IpAddr = "127.0.0.1".parse().unwrap();
        let mut first_a = 0;
        for _ in 0..2000 {
            let order = zones(&route, None, client).unwrap();
            assert_eq!(order.len(), 2, "a zone without workers is not a candidate");
            if order[0].zone == "a" {
                first_a += 1;
            }
        }
        assert!((1650..1950).contains(&first_a), "about 90% to zone a, got {first_a}/2000");
        let empty = Route { zones: vec![zone("c", &[], &[])] };
        assert_eq!(zones(&empty, None, client), Err(Refusal::NoWorkers));
    }

    #[test]
    fn a_zone_with_unreadable_rules_serves_no_one() {
        let client: IpAddr = "10.1.1.1".parse().unwrap();
        let bad =
            ZoneRoute { unparsable_ip_rules: vec!["10.0.0.0/33".into()], ..zone("a", &[], &[1]) };
        let open = zone("b", &[], &[1]);
        let route = Route { zones: vec![bad.clone()] };
        assert_eq!(zones(&route, None, client), Err(Refusal::UnreadableRules("a".into())));
        assert_eq!(zones(&route, Some("a"), client), Err(Refusal::UnreadableRules("a".into())));
        // Another zone still serves; the unreadable one is never among the candidates.
        let route = Route { zones: vec![bad, open] };
        let chosen = zones(&route, None, client).unwrap();
        assert_eq!(chosen.iter().map(|z| z.zone.as_str()).collect::<Vec<_>>(), ["b"]);
    }
}
