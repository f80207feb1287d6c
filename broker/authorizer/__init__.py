"""Authorization as Kafka's AclAuthorizer: the rules (pure), the ACL cache kept from ZooKeeper, the audit log."""
