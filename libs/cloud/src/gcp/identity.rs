//! The placement's Google service account: made with the IAM Admin API, bound to the
//! namespace's Kubernetes ServiceAccount by Workload Identity
//! (`roles/iam.workloadIdentityUser` for `<project>.svc.id.goog[<ns>/<ksa>]` on the account),
//! and granted the group's GCP rules on the project (Resource Manager), exactly those.

use google_cloud_iam_admin_v1::model::ServiceAccount;
use google_cloud_iam_v1::model::{Binding, GetPolicyOptions, Policy};
use google_cloud_type::model::Expr;

use super::Context;
use super::errors::{Kind, gax_error, kind, says};
use crate::{ATTEMPTS, CloudError, Grant, Made, Outcome, PlacementRef, names, pause};

pub const WORKLOAD_IDENTITY_USER: &str = "roles/iam.workloadIdentityUser";

pub fn email(project: &str, placement: &PlacementRef<'_>) -> String {
    format!(
        "{}@{project}.iam.gserviceaccount.com",
        names::service_account(placement.group, placement.zone)
    )
}

fn resource(project: &str, email: &str) -> String {
    format!("projects/{project}/serviceAccounts/{email}")
}

/// The Workload Identity principal of the namespace's ServiceAccount.
pub fn workload_member(project: &str, placement: &PlacementRef<'_>) -> String {
    format!(
        "serviceAccount:{project}.svc.id.goog[{}/{}]",
        placement.namespace, placement.service_account
    )
}

pub async fn ensure(
    context: Context<'_>,
    placement: &PlacementRef<'_>,
    grants: &[Grant],
) -> Result<Made, CloudError> {
    let wanted = bindings(placement, grants)?;
    let project = context.project;
    let email = email(project, placement);
    let mut notes = Vec::new();
    match account(context, &email).await? {
        None => {
            create(context, placement).await?;
            notes.push(format!("service account {email} created"));
        }
        Some(account)
            if !names::marked(
                Some(&account.description),
                placement.group,
                Some(Some(placement.zone)),
            ) =>
        {
            return Err(CloudError::NotOurs(format!(
                "service account {email} exists and ramen did not make it (its description has \
                 no {} marker); remove it or pick another zone name",
                crate::MANAGED_BY_TAG
            )));
        }
        Some(_) => {}
    }
    // The namespace's ServiceAccount may act as this account, and nothing else is granted on it.
    let member = workload_member(project, placement);
    let sa = resource(project, &email);
    let workload = [Binding::new().set_role(WORKLOAD_IDENTITY_USER)];
    edit_policy(context, &Target::Account(&sa), |policy| merge(policy, &member, &workload)).await?;
    let principal = format!("serviceAccount:{email}");
    let changed =
        edit_policy(context, &Target::Project, |policy| merge(policy, &principal, &wanted)).await?;
    if changed {
        notes.push(format!("{} project role binding(s) set", wanted.len()));
    }
    if notes.is_empty() {
        notes.push(format!("service account {email} in place"));
    }
    Ok(Made { resources: vec![sa], note: notes.join("; ") })
}

pub async fn remove(
    context: Context<'_>,
    placement: &PlacementRef<'_>,
) -> Result<Outcome, CloudError> {
    let project = context.project;
    let email = email(project, placement);
    let Some(account) = account(context, &email).await? else {
        return Ok(Outcome::Done(format!("service account {email} already gone")));
    };
    if !names::marked(Some(&account.description), placement.group, Some(Some(placement.zone))) {
        return Ok(Outcome::Done(format!(
            "service account {email} was not made by ramen; left alone"
        )));
    }
    // The project's bindings first: a deleted account would linger in them as `deleted:…`.
    let principal = format!("serviceAccount:{email}");
    edit_policy(context, &Target::Project, |policy| merge(policy, &principal, &[])).await?;
    let delete = context.clients.iam.delete_service_account().set_name(resource(project, &email));
    match context.call("deleting a service account", delete.send()).await? {
        Ok(_) => Ok(Outcome::Done(format!("service account {email} deleted"))),
        Err(err) if kind(&err) == Kind::NotFound => {
            Ok(Outcome::Done(format!("service account {email} already gone")))
        }
        Err(err) => Err(gax_error("IAM", &format!("deleting service account {email}"), err)),
    }
}

async fn account(context: Context<'_>, email: &str) -> Result<Option<ServiceAccount>, CloudError> {
    let get = context.clients.iam.get_service_account().set_name(resource(context.project, email));
    match context.call("reading a service account", get.send()).await? {
        Ok(account) => Ok(Some(account)),
        Err(err) if kind(&err) == Kind::NotFound => Ok(None),
        Err(err) => Err(gax_error("IAM", &format!("reading service account {email}"), err)),
    }
}

async fn create(context: Context<'_>, placement: &PlacementRef<'_>) -> Result<(), CloudError> {
    let id = names::service_account(placement.group, placement.zone);
    let account = ServiceAccount::new()
        .set_display_name(format!("ramen {}/{}", placement.group, placement.zone))
        .set_description(format!(
            "{} (workers of namespace {})",
            names::marker(placement.group, Some(placement.zone)),
            placement.namespace
        ));
    let create = context
        .clients
        .iam
        .create_service_account()
        .set_name(format!("projects/{}", context.project))
        .set_account_id(&id)
        .set_service_account(account);
    match context.call("creating a service account", create.send()).await? {
        Ok(_) => Ok(()),
        // Made by a concurrent call (or a retried one): the next ensure checks it.
        Err(err) if kind(&err) == Kind::Conflict => Err(CloudError::Unavailable(format!(
            "service account {id} was being created by another call; retrying"
        ))),
        Err(err) => Err(gax_error("IAM", &format!("creating service account {id}"), err)),
    }
}

/// The project bindings of the group's rules: one per role, conditioned on the rule's
/// resources (`resource.name` is one of them or under one) when it lists any.
fn bindings(placement: &PlacementRef<'_>, grants: &[Grant]) -> Result<Vec<Binding>, CloudError> {
    let mut out: Vec<Binding> = Vec::new();
    for (index, grant) in grants.iter().enumerate() {
        let condition = if grant.resources.is_empty() {
            None
        } else {
            let mut clauses = Vec::new();
            for resource in &grant.resources {
                if resource.contains(['"', '\\']) || resource.trim().is_empty() {
                    return Err(CloudError::Refused(format!(
                        "service-account rule {}: resource {resource:?} is not a resource name",
                        index + 1
                    )));
                }
                clauses.push(format!(
                    r#"resource.name == "{resource}" || resource.name.startsWith("{resource}/")"#
                ));
            }
            Some(
                Expr::new()
                    .set_title(format!(
                        "ramen {}/{} rule {}",
                        placement.group,
                        placement.zone,
                        index + 1
                    ))
                    .set_expression(clauses.join(" || ")),
            )
        };
        for role in &grant.permissions {
            let is_role = role.starts_with("roles/")
                || (role.starts_with("projects/") || role.starts_with("organizations/"))
                    && role.contains("/roles/");
            if !is_role {
                return Err(CloudError::Refused(format!(
                    "service-account rule {}: {role:?} is not a GCP role (roles/…, \
                     projects/<p>/roles/… or organizations/<o>/roles/…)",
                    index + 1
                )));
            }
            let binding = Binding::new().set_role(role).set_or_clear_condition(condition.clone());
            if !out.iter().any(|b| same_binding(b, &binding)) {
                out.push(binding);
            }
        }
    }
    Ok(out)
}

fn same_binding(a: &Binding, b: &Binding) -> bool {
    let condition = |b: &Binding| b.condition.as_ref().map(|c| c.expression.clone());
    a.role == b.role && condition(a) == condition(b)
}

/// Makes `member`'s bindings in `policy` exactly `wanted` (each named by role and condition),
/// leaving every other member alone. Answers whether anything changed.
fn merge(policy: &mut Policy, member: &str, wanted: &[Binding]) -> bool {
    let mut changed = false;
    for binding in &mut policy.bindings {
        let keep = wanted.iter().any(|w| same_binding(w, binding));
        if !keep && let Some(at) = binding.members.iter().position(|m| m == member) {
            binding.members.remove(at);
            changed = true;
        }
    }
    let with_member: Vec<Binding> = wanted
        .iter()
        .map(|w| {
            let mut w = w.clone();
            w.members = vec![member.to_owned()];
            w
        })
        .collect();
    for want in &with_member {
        match policy.bindings.iter_mut().find(|b| same_binding(b, want)) {
            Some(binding) => {
                for m in &want.members {
                    if !binding.members.contains(m) {
                        binding.members.push(m.clone());
                        changed = true;
                    }
                }
            }
            None => {
                policy.bindings.push(want.clone());
                changed = true;
            }
        }
    }
    policy.bindings.retain(|b| !b.members.is_empty());
    if policy.bindings.iter().any(|b| b.condition.is_some()) {
        policy.version = 3;
    }
    changed
}

enum Target<'a> {
    /// The project's policy (Resource Manager).
    Project,
    /// A service account's own policy (IAM).
    Account(&'a str),
}

/// Reads a policy, changes it, writes it with the etag it was read with; a stale etag
/// (someone else wrote in between) is read again and retried, never overwritten.
async fn edit_policy(
    context: Context<'_>,
    target: &Target<'_>,
    change: impl Fn(&mut Policy) -> bool,
) -> Result<bool, CloudError> {
    let project_resource = format!("projects/{}", context.project);
    let (api, resource) = match target {
        Target::Project => ("Resource Manager", project_resource.as_str()),
        Target::Account(sa) => ("IAM", *sa),
    };
    let options = GetPolicyOptions::new().set_requested_policy_version(3);
    let mut attempt = 0;
    loop {
        let read = match target {
            Target::Project => {
                let get = context
                    .clients
                    .projects
                    .get_iam_policy()
                    .set_resource(resource)
                    .set_options(options.clone());
                context.call("reading an IAM policy", get.send()).await?
            }
            Target::Account(_) => {
                let get = context
                    .clients
                    .iam
                    .get_iam_policy()
                    .set_resource(resource)
                    .set_options(options.clone());
                context.call("reading an IAM policy", get.send()).await?
            }
        };
        let mut policy =
            read.map_err(|e| gax_error(api, &format!("reading {resource}'s policy"), e))?;
        if !change(&mut policy) {
            return Ok(false);
        }
        let written = match target {
            Target::Project => {
                let set = context
                    .clients
                    .projects
                    .set_iam_policy()
                    .set_resource(resource)
                    .set_policy(policy);
                context.call("writing an IAM policy", set.send()).await?
            }
            Target::Account(_) => {
                let set =
                    context.clients.iam.set_iam_policy().set_resource(resource).set_policy(policy);
                context.call("writing an IAM policy", set.send()).await?
            }
        };
        match written {
            Ok(_) => return Ok(true),
            // A stale etag, or an account IAM does not see yet: read again.
            Err(err) if attempt + 1 < ATTEMPTS && retry_policy(&err) => {
                pause(attempt).await;
                attempt += 1;
            }
            Err(err) => return Err(gax_error(api, &format!("writing {resource}'s policy"), err)),
        }
    }
}

fn retry_policy(err: &google_cloud_compute_v1::Error) -> bool {
    kind(err) == Kind::Conflict || says(err, "does not exist")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn member_roles(policy: &Policy, member: &str) -> Vec<String> {
        policy
            .bindings
            .iter()
            .filter(|b| b.members.iter().any(|m| m == member))
            .map(|b| b.role.clone())
            .collect()
    }

    #[test]
    fn a_members_bindings_become_exactly_the_wanted_ones_and_others_stay() {
        let mut policy = Policy::new().set_bindings([
            Binding::new()
                .set_role("roles/viewer")
                .set_members(["user:ops@x", "serviceAccount:sa"]),
            Binding::new().set_role("roles/editor").set_members(["serviceAccount:sa"]),
        ]);
        let wanted = [
            Binding::new().set_role("roles/viewer"),
            Binding::new().set_role("roles/storage.objectViewer").set_condition(
                Expr::new().set_title("t").set_expression(r#"resource.name == "b""#),
            ),
        ];
        assert!(merge(&mut policy, "serviceAccount:sa", &wanted));
        assert_eq!(
            member_roles(&policy, "serviceAccount:sa"),
            ["roles/viewer", "roles/storage.objectViewer"]
        );
        assert_eq!(member_roles(&policy, "user:ops@x"), ["roles/viewer"]);
        assert_eq!(policy.version, 3, "conditions need policy version 3");
        assert!(
            policy.bindings.iter().all(|b| b.role != "roles/editor"),
            "emptied binding dropped"
        );
        assert!(!merge(&mut policy, "serviceAccount:sa", &wanted), "no change the second time");
        assert!(merge(&mut policy, "serviceAccount:sa", &[]));
        assert!(member_roles(&policy, "serviceAccount:sa").is_empty());
        assert_eq!(member_roles(&policy, "user:ops@x"), ["roles/viewer"]);
    }
}
