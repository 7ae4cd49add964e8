"""Access control lists (Redis 7.0's acl.c): users, their rules, the
permission check, the ACL LOG, the ACL file.

``Acl`` is the server's ``acl`` slot: the users by name (the default user
always among them, the same object for the server's life), the log, and the
operations the ACL command, AUTH/HELLO, CONFIG and dispatch use.  Every
client has a ``user`` (a users.User).  process_command runs
check.check_command right after the authentication check for a user that
is not ``unrestricted``; the request loop's fast path runs a restricted
user's command directly only when check.fast_allows shows the check would
pass (a cached plan per user and command, its key patterns matched in C by
the compiled loop), so the default user with all rights costs nothing and
a user with key patterns little.
"""

from __future__ import annotations

from .. import log as serverlog  # (``log`` is also this package's log.py)
from ..config import ConfigError
from .check import DENIED_AUTH, DENIED_CHANNEL, DENIED_CMD, DENIED_KEY, channel_allowed
from .file import parse_acl_file, save_acl_file, user_line, validate_user_line
from .log import CTX_MULTI, CTX_TOPLEVEL, AclLog
from .users import RETIRED, RuleError, User, has_spaces, merge_selector_args, table_changed


class Acl:
    def __init__(self, server):
        self.server = server
        cfg = server.config
        self.pubsub_all = cfg["acl-pubsub-default"] == "allchannels"
        self.users = {}
        self.default = self._make_default()
        self.users[b"default"] = self.default
        # internal clients (AOF loading, our master's link): no user, all rights
        self.superuser = self._make_default(b"(superuser)")
        self.log = AclLog(cfg["acllog-max-len"])
        # INFO stats' acl_access_denied_* (7.2): denials by reason
        self.denied = {DENIED_AUTH: 0, DENIED_CMD: 0, DENIED_KEY: 0, DENIED_CHANNEL: 0}
        self.auth_free = True        # new connections are authenticated (default: on, nopass)

        def upd_pubsub(v):
            self.pubsub_all = v == "allchannels"
        cfg.on_change("acl-pubsub-default", upd_pubsub)

        def upd_loglen(v):
            # Redis 7.4: the entries stay until the next one is logged
            self.log.max_len = v
        cfg.on_change("acllog-max-len", upd_loglen)

        def upd_pass(v):
            self.set_default_password(v)
        cfg.on_change("requirepass", upd_pass)
        cfg.set_rewrite_provider("user", self._rewrite_lines)
        self.set_default_password(cfg["requirepass"])
        self._load_at_startup(cfg)

    def _make_default(self, name=b"default") -> User:
        u = User(name, self.pubsub_all)
        for op in (b"+@all", b"~*", b"&*", b"on", b"nopass"):
            u.apply(op)
        return u

    # -- start-up and configuration --------------------------------------------
    def _load_at_startup(self, cfg):
        pending = cfg.pending_users
        seen = set()
        for linenum, line, argv in pending:
            bad = validate_user_line(argv, seen, self.pubsub_all)
            if bad is not None:
                # Redis names argv[j], j counting the rules (its quirk)
                j, reason = bad
                raise ConfigError(linenum, line, "Error in user declaration '%s': %s" % (
                    argv[j].decode("utf-8", "replace") if j < len(argv) else "", reason))
        if cfg["aclfile"] and pending:
            serverlog.warning("Configuring Redis with users defined in redis.conf and at the same setting an ACL file "
                        "path is invalid. This setup is very likely to lead to configuration errors and security "
                        "holes, please define either an ACL file or declare users directly in your redis.conf, "
                        "but not both.")
            raise SystemExit(1)
        for linenum, line, argv in pending:
            name = argv[1]
            if has_spaces(name):
                serverlog.warning("Spaces not allowed in ACL usernames")
                serverlog.warning("Critical error while loading ACLs. Exiting.")
                raise SystemExit(1)
            u = self.users.get(name)
            if u is None:
                u = self.users[name] = User(name, self.pubsub_all)
            else:
                u.apply(b"reset", self.pubsub_all)
            merged, _ = merge_selector_args(argv[2:])
            for op in merged:
                try:
                    u.apply(op, self.pubsub_all)
                except RuleError as e:
                    serverlog.warning("Error loading ACL rule '%s' for the user named '%s': %s" % (
                        op.decode("utf-8", "replace"), name.decode("utf-8", "replace"), e.reason))
                    serverlog.warning("Critical error while loading ACLs. Exiting.")
                    raise SystemExit(1)
            if not u.enabled:
                serverlog.notice("The user '%s' is disabled (there is no 'on' modifier in the user description). Make "
                           "sure this is not a configuration error." % name.decode("utf-8", "replace"))
        if cfg["aclfile"]:
            err = self.load_file()
            if err is not None:
                serverlog.warning("Aborting Redis startup because of ACL errors: %s" % err)
                raise SystemExit(1)
        self.changed()

    def _rewrite_lines(self):
        """CONFIG REWRITE's ``user`` lines (none while an ACL file is used)."""
        if self.server.config["aclfile"]:
            return []
        return [user_line(self.users[n]).decode("utf-8", "surrogateescape") for n in sorted(self.users)]

    def set_default_password(self, pw):
        """requirepass: the default user's only password (None: nopass)."""
        d = self.default
        d.apply(b"resetpass")
        if pw:
            d.apply(b">" + pw.encode("utf-8", "surrogateescape"))
        else:
            d.apply(b"nopass")
        self.changed()

    # -- users ---------------------------------------------------------------
    def get(self, name: bytes):
        return self.users.get(name)

    def set_user(self, name: bytes, rules, current=None) -> str | None:
        """ACLStringSetUser: all rules or none; the error text or None
        (``current``: the client running the command)."""
        merged, bad = merge_selector_args(list(rules))
        if merged is None:
            return "Unmatched parenthesis in acl selector starting at '%s'." % rules[bad].decode(
                "utf-8", "replace")
        u = self.users.get(name)
        temp = u.clone() if u is not None else User(name, self.pubsub_all)
        for op in merged:
            try:
                temp.apply(op, self.pubsub_all)
            except RuleError as e:
                return "Error in ACL SETUSER modifier '%s': %s" % (op.decode("utf-8", "replace"), e.reason)
        if u is not None:
            self._kill_pubsub_if_needed(temp, u, current)
            u.copy_from(temp)
        else:
            self.users[name] = temp
        self.changed()
        return None

    def delete_users(self, names, current) -> int:
        n = 0
        for name in names:
            u = self.users.pop(name, None)
            if u is not None:
                self._kill_clients_of(u, current)
                n += 1
        if n:
            self.changed()
        return n

    def _kill_clients_of(self, u, current):
        """ACLFreeUserAndKillClients."""
        for c in list(self.server.clients.values()):
            if c.user is u:
                self._deauth_and_close(c, current)

    def _deauth_and_close(self, c, current):
        """deauthenticateAndCloseClient: the client is the default user's,
        unauthenticated, and goes; the one running the command (Redis 7.4)
        after its reply."""
        c.user = self.default
        c.authenticated = False
        if c is current:
            c.close_after_reply = True
            c.update_slow()
        else:
            c.close()

    @staticmethod
    def _upcoming_channels(new, orig):
        """getUpcomingChannelList: None when ``new`` allows every channel
        ``orig`` did, else the channel patterns ``new`` allows."""
        if any(s.allchannels for s in new.selectors):
            return None
        upcoming = [p for s in new.selectors for p in s.channels]
        for s in orig.selectors:
            if s.allchannels or any(p not in upcoming for p in s.channels):
                return upcoming
        return None

    @staticmethod
    def _subscriptions_denied(c, upcoming) -> bool:
        """ACLShouldKillPubsubClient: a subscription of ``c`` that the
        channel patterns ``upcoming`` do not allow."""
        if not (c.pubsub_channels or c.pubsub_patterns or c.pubsub_shard):
            return False
        if any(not channel_allowed(upcoming, p, True) for p in (c.pubsub_patterns or ())):
            return True
        return any(not channel_allowed(upcoming, ch, False)
                   for chans in (c.pubsub_channels, c.pubsub_shard) for ch in (chans or ()))

    def _kill_pubsub_if_needed(self, new, orig, current):
        """ACLKillPubsubClientsIfNeeded: subscribers of ``orig`` whose
        channels the new rules no longer allow are disconnected."""
        upcoming = self._upcoming_channels(new, orig)
        if upcoming is None:
            return
        for c in list(self.server.clients.values()):
            if c.user is orig and self._subscriptions_denied(c, upcoming):
                self._deauth_and_close(c, current)

    # -- the command table changed (modules) ------------------------------------
    def _every_user(self):
        return list(self.users.values()) + [self.superuser]

    def commands_added(self, cmds):
        """A module's commands were put in the table."""
        table_changed()
        olds = [(cmd, RETIRED.pop(cmd.fullname, None)) for cmd in cmds]
        # Redis 7.2+ re-applies every user's rules when the new commands
        # have ACL categories of their own (a category rule then covers them)
        recompute = any(cmd.meta.get("acl_categories") for cmd in cmds)
        for u in self._every_user():
            for cmd, old in olds:
                for sel in u.selectors:
                    sel.command_added(cmd, old)
            if recompute:
                for sel in u.selectors:
                    sel.recompute()
            u.commands_changed()

    def commands_removed(self, cmds):
        """A module's commands were taken out of the table."""
        table_changed()
        for cmd in cmds:
            RETIRED[cmd.fullname] = cmd
        for u in self._every_user():
            u.commands_changed()

    def changed(self):
        """After any change of users: who needs to authenticate, which
        clients must take the checking (general) path."""
        d = self.default
        self.auth_free = d.nopass and d.enabled
        srv = self.server
        for c in srv.clients.values():
            if self.auth_free and not c.authenticated:
                c.authenticated = True
            c.update_slow()

    # -- authentication ------------------------------------------------------
    def authenticate(self, c, name: bytes, password: bytes, command: bytes) -> bool:
        """ACLAuthenticateUser: on success the client is that user's
        (``command``: AUTH or HELLO as sent, what ACL LOG names)."""
        u = self.users.get(name)
        if u is not None and u.enabled and u.check_password(password):
            self._log_in(c, u)
            return True
        self.log_denial(c, DENIED_AUTH, CTX_MULTI if c.multi is not None else CTX_TOPLEVEL, command, name)
        return False

    @staticmethod
    def _log_in(c, u):
        c.authenticated = True
        c.user = u
        c.update_slow()

    def authenticate_certificate(self, c, cert, by: str) -> bool:
        """tls-auth-clients-user CN | URI (Redis 8.6, valkey 8.1): a TLS
        client whose verified certificate has one Common Name (one URI
        subject alternative name), the name of an enabled user, is that
        user from the start, without AUTH.  The name is compared whole (a
        NUL inside it is part of it: Redis 8.10.1's fix)."""
        cert = cert or {}
        if by == "CN":
            cns = [v for rdn in cert.get("subject", ()) for k, v in rdn if k == "commonName"]
        else:
            cns = [v for k, v in cert.get("subjectAltName", ()) if k == "URI"]
        if len(cns) != 1:
            return False
        u = self.users.get(cns[0].encode("utf-8", "surrogateescape"))
        if u is None or not u.enabled:
            return False
        self._log_in(c, u)
        serverlog.verbose("TLS client authenticated as user %s by its certificate" % u.name.decode("utf-8", "replace"))
        return True

    def log_denial(self, c, reason, context, obj: bytes, username=None):
        self.denied[reason] = self.denied.get(reason, 0) + 1
        real = c
        if c.in_script and c.script_caller is not None:
            real = c.script_caller[0]
        self.log.add(reason, context, obj, username if username is not None else c.user.name,
                     real.info_string().encode("utf-8", "surrogateescape"))

    def info_lines(self) -> list:
        d = self.denied
        return ["acl_access_denied_auth:%d" % d[DENIED_AUTH], "acl_access_denied_cmd:%d" % d[DENIED_CMD],
                "acl_access_denied_key:%d" % d[DENIED_KEY], "acl_access_denied_channel:%d" % d[DENIED_CHANNEL]]

    # -- the ACL file ----------------------------------------------------------
    def load_file(self, current=None) -> str | None:
        """ACLLoadFromFile: all users from the file, or nothing (errors)."""
        path = self.server.config["aclfile"]
        users, err = parse_acl_file(path, path, self.pubsub_all, self._make_default)
        if err is not None:
            return err
        self.default.copy_from(users[b"default"])
        users[b"default"] = self.default
        self.users = users
        # Redis 7.4: a client goes only if its user is gone or no longer
        # allows one of its subscriptions; the others take the new user of
        # their user's name (our master's link and the like keep theirs)
        upcoming = {}
        for c in list(self.server.clients.values()):
            orig = c.user
            if orig is self.superuser:
                continue
            new = users.get(orig.name)
            if new is None:
                self._deauth_and_close(c, current)
                continue
            if new.name not in upcoming:
                upcoming[new.name] = self._upcoming_channels(new, orig)
            chans = upcoming[new.name]
            if chans is not None and self._subscriptions_denied(c, chans):
                self._deauth_and_close(c, current)
                continue
            c.user = new
        self.changed()
        return None

    def save_file(self) -> bool:
        return save_acl_file(self.server.config["aclfile"], self.users)
