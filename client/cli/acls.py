"""`minikafka acls`: add, list and remove ACLs over the wire (CreateAcls, DescribeAcls, DeleteAcls), with
kafka-acls' options and output."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import click

from client.admin import Admin
from client.cli.common import client_options, client_security, key_values, resolve_bootstrap, run, zookeeper_of
from client.zk_acls import ZkAcls
from protocol.acls import (
    CLUSTER_NAME,
    WILDCARD_HOST,
    AccessControlEntry,
    AccessControlEntryFilter,
    AclBinding,
    AclBindingFilter,
    AclFormatError,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourcePatternFilter,
    ResourceType,
)
from protocol.errors import ErrorCode

AclService = Admin | ZkAcls


def _operation(_ctx: click.Context, _param: click.Parameter, values: tuple[str, ...]) -> list[AclOperation]:
    try:
        return [AclOperation.parse(v) for v in values]
    except AclFormatError as e:
        raise click.BadParameter(str(e)) from None


def resources(topics: Iterable[str], groups: Iterable[str], transactional_ids: Iterable[str], cluster: bool
              ) -> list[tuple[ResourceType, str]]:
    """The resources named on the command line."""
    return [*((ResourceType.TOPIC, t) for t in topics), *((ResourceType.GROUP, g) for g in groups),
            *((ResourceType.TRANSACTIONAL_ID, t) for t in transactional_ids),
            *([(ResourceType.CLUSTER, CLUSTER_NAME)] if cluster else [])]


def entries(allow_principals: Iterable[str], deny_principals: Iterable[str], allow_hosts: Iterable[str],
            deny_hosts: Iterable[str], operations: Iterable[AclOperation]) -> list[AccessControlEntry]:
    """kafka-acls' entries: each principal from each of its hosts ("*" if none) for each operation (ALL if none)."""
    operations = list(operations) or [AclOperation.ALL]
    found = []
    for principals, hosts, permission in ((allow_principals, allow_hosts, AclPermissionType.ALLOW),
                                          (deny_principals, deny_hosts, AclPermissionType.DENY)):
        for principal in principals:
            for host in list(hosts) or [WILDCARD_HOST]:
                found += [AccessControlEntry(principal, host, op, permission) for op in operations]
    return found


def bindings_lines(title: str, pattern: object, listed: Iterable[object]) -> list[str]:
    """kafka-acls' block: the title, the resource, one tab-indented line an entry, then a blank line."""
    return [f"{title} `{pattern}`: ", *(f" \t{e} " if i == 0 else f"\t{e} " for i, e in enumerate(listed)), ""]


def by_pattern(bindings: Iterable[AclBinding]) -> dict[ResourcePattern, list[AccessControlEntry]]:
    grouped: dict[ResourcePattern, list[AccessControlEntry]] = {}
    for b in bindings:
        grouped.setdefault(b.pattern, []).append(b.entry)
    return {pattern: sorted(grouped[pattern]) for pattern in sorted(grouped)}


@click.command("acls")
@click.option("--add", "action", flag_value="add", help="Add the ACLs.")
@click.option("--remove", "action", flag_value="remove", help="Remove the ACLs.")
@click.option("--list", "action", flag_value="list", help="List the ACLs (of the resources named, else all).")
@click.option("--allow-principal", multiple=True, metavar="PRINCIPAL", help="Allow this principal (User:NAME).")
@click.option("--deny-principal", multiple=True, metavar="PRINCIPAL", help="Deny this principal (User:NAME).")
@click.option("--allow-host", multiple=True, metavar="HOST", help="From this host (default: every host).")
@click.option("--deny-host", multiple=True, metavar="HOST", help="From this host (default: every host).")
@click.option("--principal", "principals", multiple=True, metavar="PRINCIPAL",
              help="With --list: only this principal's ACLs.")
@click.option("--operation", "operations", multiple=True, callback=_operation, metavar="OPERATION",
              help="Read, Write, Create, Delete, Alter, Describe, ClusterAction, DescribeConfigs, AlterConfigs, "
                   "IdempotentWrite, All (default: All); repeatable.")
@click.option("--topic", "topics", multiple=True, help="A topic (or a prefix); repeatable.")
@click.option("--group", "groups", multiple=True, help="A consumer group (or a prefix); repeatable.")
@click.option("--transactional-id", "transactional_ids", multiple=True, help="A transactional id; repeatable.")
@click.option("--cluster", is_flag=True, help="The cluster.")
@click.option("--resource-pattern-type", type=click.Choice(["literal", "prefixed", "any", "match"],
                                                           case_sensitive=False), default="literal",
              show_default=True, help="How the resource names match (any and match only with --list and --remove).")
@click.option("--force", is_flag=True, help="Remove without asking.")
@click.option("--authorizer-properties", multiple=True, metavar="KEY=VALUE", callback=key_values,
              help="zookeeper.connect=HOST:PORT[/CHROOT]: change the ACLs in ZooKeeper directly, as kafka-acls does, "
                   "without brokers (how the brokers' own ACLs are written before they enforce any).")
@client_options
def acls_command(action: str | None, allow_principal: tuple[str, ...], deny_principal: tuple[str, ...],
                 allow_host: tuple[str, ...], deny_host: tuple[str, ...], principals: tuple[str, ...],
                 operations: list[AclOperation], topics: tuple[str, ...], groups: tuple[str, ...],
                 transactional_ids: tuple[str, ...], cluster: bool, resource_pattern_type: str, force: bool,
                 authorizer_properties: dict[str, str], bootstrap_server: str | None, directory: Path) -> None:
    """Add, list or remove ACLs, like Kafka's kafka-acls."""
    if action is None:
        raise click.UsageError("one of --add, --remove or --list is required")

    def service() -> AclService:
        if "zookeeper.connect" in authorizer_properties:
            return ZkAcls(*zookeeper_of(authorizer_properties["zookeeper.connect"], directory))
        bootstrap = resolve_bootstrap(bootstrap_server, directory)
        return Admin(bootstrap, client_id="minikafka-acls", **client_security())

    pattern_type = PatternType.parse(resource_pattern_type)
    named = resources(topics, groups, transactional_ids, cluster)
    wanted = entries(allow_principal, deny_principal, allow_host, deny_host, operations)
    if action == "add":
        if pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
            raise click.BadParameter("--add takes literal or prefixed", param_hint="--resource-pattern-type")
        if not named or not wanted:
            raise click.UsageError("--add needs a resource and --allow-principal or --deny-principal")
        run(_add([AclBinding(ResourcePattern(t, n, pattern_type), e) for t, n in named for e in wanted],
                 service(), named, pattern_type))
    elif action == "remove":
        if not named:
            raise click.UsageError("--remove needs a resource (--topic, --group, --transactional-id or --cluster)")
        filters = [AclBindingFilter(ResourcePatternFilter(t, n, pattern_type), AccessControlEntryFilter(
            e.principal, e.host, e.operation, e.permission_type)) for t, n in named for e in wanted] or [
            AclBindingFilter(ResourcePatternFilter(t, n, pattern_type)) for t, n in named]
        if not force and not click.confirm(f"Are you sure you want to remove ACLs matching {len(filters)} "
                                           f"filter(s) from {', '.join(f'{t.name}:{n}' for t, n in named)}?"):
            return
        run(_remove(filters, service(), named, pattern_type))
    else:
        run(_list(service(), named, pattern_type, principals))


def _filters(named: list[tuple[ResourceType, str]], pattern_type: PatternType, principal: str | None = None
             ) -> list[AclBindingFilter]:
    entry = AccessControlEntryFilter(principal=principal)
    if not named:
        return [AclBindingFilter(ResourcePatternFilter(pattern_type=PatternType.ANY), entry)]
    return [AclBindingFilter(ResourcePatternFilter(t, n, pattern_type), entry) for t, n in named]


async def _print_current(admin: AclService, named: list[tuple[ResourceType, str]], pattern_type: PatternType,
                         principals: Iterable[str] = ()) -> None:
    found: dict[AclBinding, None] = {}
    for principal in list(principals) or [None]:
        for acl_filter in _filters(named, pattern_type, principal):
            found.update(dict.fromkeys(await admin.describe_acls(acl_filter)))
    for pattern, listed in by_pattern(found).items():
        click.echo("\n".join(bindings_lines("Current ACLs for resource", pattern, listed)))


async def _add(bindings: list[AclBinding], service: AclService, named: list[tuple[ResourceType, str]],
               pattern_type: PatternType) -> None:
    async with service as admin:
        for pattern, listed in by_pattern(bindings).items():
            click.echo("\n".join(bindings_lines("Adding ACLs for resource", pattern, listed)))
        failed = [(b, code, message) for b, (code, message) in zip(bindings, await admin.create_acls(bindings),
                                                                   strict=True) if code != ErrorCode.NONE]
        for binding, code, message in failed:
            click.echo(f"Error while adding ACLs {binding.entry} to {binding.pattern}: {code.name}"
                       f"{': ' + message if message else ''}", err=True)
        await _print_current(admin, named, pattern_type)
    if failed:
        raise SystemExit(1)


async def _remove(filters: list[AclBindingFilter], service: AclService, named: list[tuple[ResourceType, str]],
                  pattern_type: PatternType) -> None:
    async with service as admin:
        results = await admin.delete_acls(filters)
        for code, message, _deleted in results:
            if code != ErrorCode.NONE:
                click.echo(f"Error while removing ACLs: {code.name}{': ' + message if message else ''}", err=True)
        await _print_current(admin, named, pattern_type)
    if any(code != ErrorCode.NONE for code, _, _ in results):
        raise SystemExit(1)


async def _list(service: AclService, named: list[tuple[ResourceType, str]], pattern_type: PatternType,
                principals: tuple[str, ...]) -> None:
    async with service as admin:
        await _print_current(admin, named, pattern_type, principals)
