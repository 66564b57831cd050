//! Users (super admins): who has an account, and Add user — with no password given, the API
//! makes a one-time password, shown here once, which the user must change at first sign-in.
//! Group membership is given on each group page.

use axum::extract::State;
use axum::response::Response;
use maud::html;

use super::Console;
use super::api::enc;
use super::layout::{Nav, action_button, badge, failure_page, form_error, render, when};
use super::model::{Page, User};
use super::viewer::Viewer;

pub async fn page(State(console): State<Console>, viewer: Viewer) -> Response {
    let users = match console.api.get::<Page<User>>(&viewer.ctx, "/api/users?page_size=1000").await
    {
        Ok(users) => users,
        Err(f) => return failure_page(&viewer, Nav::Users, "Users are for super admins.", &f),
    };
    let body = html! {
        h1 { "Users" }
        p.lead { "Accounts that can sign in. Give them a role on a group from the group page's Members section." }
        div.table-wrap { table #users {
            thead { tr { th scope="col" { "Email" } th scope="col" { "Role" } th scope="col" { "Password" } th scope="col" { "Last sign-in" } th scope="col" { span.sr { "Delete" } } } }
            tbody { @for u in &users.items {
                tr data-user=(u.email) {
                    th scope="row" { (u.email) @if u.id == viewer.user.id { " " span.muted { "(you)" } } }
                    td { @if u.super_admin { span.badge.info { "super admin" } } @else { span.muted { "user" } } }
                    td { @if u.must_change_password { (badge("pending")) " " span.muted.small { "one-time password" } } @else { span.muted { "set" } } }
                    td { (when(u.last_login_at.as_deref())) }
                    td.actions { @if u.id != viewer.user.id {
                        (action_button("DELETE", &format!("/api/users/{}", enc(&u.id)), "Delete", "danger small",
                            Some(&format!("Delete user {}? Their sessions end and their memberships go.", u.email))))
                    } }
                }
            } }
        } }
        section.card #add-user {
            h2 { "Add user" }
            form.grid data-api="/api/users" data-then="show" {
                label { "Email" input name="email" type="email" required placeholder="someone@example.com"; }
                label.check { input type="checkbox" name="super_admin" data-kind="bool"; "Super admin" }
                (form_error())
                div.actions { button.primary type="submit" { "Add user" } }
                div.result.reveal data-result hidden role="status" {
                    p { "One-time password for " strong data-field="user.email" {} " — give it to them now; it is not shown again:" }
                    p { code.secret data-field="one_time_password" {} }
                    p { button type="button" data-reload { "Done" } }
                }
            }
        }
    };
    render(&viewer, Nav::Users, "Users", body)
}
