"""Real mail servers for the email tests: Dovecot (IMAP with IDLE, LMTP, and the SASL
login Postfix asks) and Postfix (submission, delivering into Dovecot by LMTP), from
Debian's packages, started on 127.0.0.1 with a throwaway configuration in a folder of
their own; every user of ``example.test`` exists, with the one password. A second
Dovecot over the same mailboxes, one that does not offer IDLE, is started on demand.

Both run as root here (the tests run as root in CI): Postfix's master insists on it,
and Dovecot then drops to its own users (``dovenull``, ``dovecot``); the mailboxes
belong to ``nobody``. Nothing listens beyond 127.0.0.1 and nothing leaves the machine:
the only domain is ``example.test``, and every other destination is an error.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import pwd
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from tests.ports import free_port

DOMAIN = "example.test"
AUTHSERV = "mx.example.test"
PASSWORD = "not-a-real-secret"


class MailServersUnavailableError(Exception):
    pass


def _wait_port(port: int, what: str, log: Path) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
    raise MailServersUnavailableError(f"{what} did not listen on {port}: {tail}")


@dataclass
class MailServers:
    folder: Path
    imap_port: int
    submission_port: int
    lmtp_port: int
    auth_port: int
    postfix: subprocess.Popen[bytes] | None = None

    def address(self, user: str) -> str:
        return f"{user}@{DOMAIN}"

    def stop(self) -> None:
        if self.postfix is not None:
            # "postfix stop": its master (forked off start-fg) ends with its children.
            subprocess.run(
                ["postfix", "-c", str(self.folder / "postfix"), "stop"],
                check=False,
                capture_output=True,
            )
            self.postfix.terminate()
            self.postfix.wait(timeout=30)
        for pid in self.folder.glob("dovecot*/run/master.pid"):  # without_idle's too
            with contextlib.suppress(ProcessLookupError, ValueError):
                os.kill(int(pid.read_text().strip()), 15)


def start(folder: Path) -> MailServers:
    if os.geteuid() != 0:
        raise MailServersUnavailableError("Postfix's master runs as root only")
    if not (shutil.which("dovecot") or Path("/usr/sbin/dovecot").exists()):
        raise MailServersUnavailableError(
            "dovecot is not installed (apt-get install dovecot-imapd)"
        )
    if not Path("/usr/sbin/postfix").exists():
        raise MailServersUnavailableError("postfix is not installed (apt-get install postfix)")
    servers = MailServers(folder, free_port(), free_port(), free_port(), free_port())
    try:
        _dovecot(servers, "dovecot", servers.imap_port, _LMTP_AND_AUTH.format(s=servers))
        _wait_port(servers.auth_port, "dovecot auth", folder / "dovecot" / "dovecot.log")
        _postfix(servers)
    except BaseException:
        servers.stop()
        raise
    return servers


_LMTP_AND_AUTH = """protocols = imap lmtp
service lmtp {{
  inet_listener lmtp {{
    address = 127.0.0.1
    port = {s.lmtp_port}
  }}
}}
service auth {{
  inet_listener {{
    address = 127.0.0.1
    port = {s.auth_port}
  }}
}}"""


def without_idle(s: MailServers) -> MailServers:
    """A second Dovecot, IMAP only, over the same mailboxes, whose CAPABILITY (before and
    after the login) lacks IDLE, as some servers' does: ``s`` with it as the IMAP server.
    Stopped with ``s``."""
    port = free_port()
    # Dovecot's own list (2.3) without IDLE and the extensions the bot never asks for.
    capability = "IMAP4rev1 SASL-IR LOGIN-REFERRALS ID ENABLE LITERAL+ NAMESPACE UIDPLUS"
    _dovecot(s, "dovecot-noidle", port, f"protocols = imap\nimap_capability = {capability}")
    return dataclasses.replace(s, imap_port=port, postfix=None)


def _dovecot(s: MailServers, name: str, imap_port: int, more: str) -> None:
    d = s.folder / name
    (d / "run").mkdir(parents=True)
    mail = s.folder / "dovecot" / "mail"  # the first one's, shared
    nobody = pwd.getpwnam("nobody")
    if not mail.exists():
        mail.mkdir()
        os.chown(mail, nobody.pw_uid, nobody.pw_gid)
    conf = s.folder / f"{name}.conf"
    conf.write_text(
        f"""
base_dir = {d}/run
state_dir = {d}/state
log_path = {d}/dovecot.log
{more}
listen = 127.0.0.1
ssl = no
disable_plaintext_auth = no
auth_mechanisms = plain
auth_failure_delay = 0
verbose_proctitle = yes
first_valid_uid = 1
mail_location = maildir:{mail}/%u
mail_uid = {nobody.pw_uid}
mail_gid = {nobody.pw_gid}
passdb {{
  driver = static
  args = password={PASSWORD}
}}
userdb {{
  driver = static
  args = uid={nobody.pw_uid} gid={nobody.pw_gid} home={mail}/%u
}}
namespace inbox {{
  inbox = yes
  mailbox Sent {{
    special_use = \\Sent
    auto = create
  }}
}}
service imap-login {{
  inet_listener imap {{
    address = 127.0.0.1
    port = {imap_port}
  }}
  inet_listener imaps {{
    port = 0
  }}
}}
""",
        encoding="utf-8",
    )
    # It forks into the background, keeping what it was given as stdout: a file, not a pipe.
    out = d / "start.log"
    with out.open("w", encoding="utf-8") as log:
        code = subprocess.run(["dovecot", "-c", str(conf)], stdout=log, stderr=log, check=False)
    if code.returncode != 0:
        raise MailServersUnavailableError(f"dovecot: {out.read_text().strip()}")
    _wait_port(imap_port, name, d / "dovecot.log")


def _postfix(s: MailServers) -> None:
    p = s.folder / "postfix"
    p.mkdir()
    shutil.copy("/etc/postfix/master.cf", p / "master.cf")
    (p / "main.cf").write_text("compatibility_level = 3.6\n", encoding="utf-8")
    settings = {
        "queue_directory": f"{s.folder}/spool",
        "data_directory": f"{s.folder}/postfix-data",
        "maillog_file": "/dev/stdout",
        "inet_interfaces": "127.0.0.1",
        "inet_protocols": "ipv4",
        "myhostname": AUTHSERV,
        "mydomain": DOMAIN,
        "mydestination": "",
        "local_recipient_maps": "",
        "relay_domains": "",
        "virtual_mailbox_domains": DOMAIN,
        "virtual_transport": f"lmtp:inet:127.0.0.1:{s.lmtp_port}",
        "default_transport": "error:nothing leaves this test server",
        "smtpd_sasl_type": "dovecot",
        "smtpd_sasl_path": f"inet:127.0.0.1:{s.auth_port}",
        "smtpd_sasl_auth_enable": "yes",
        "smtpd_tls_security_level": "none",
        "smtpd_relay_restrictions": "permit_sasl_authenticated, reject",
        "smtpd_recipient_restrictions": "permit_sasl_authenticated, reject",
        "smtputf8_enable": "no",
        "alias_maps": "",
        "alias_database": "",
        "maximal_queue_lifetime": "1h",
        # A refused login is answered at once (the doctor's wrong-password case).
        "smtpd_error_sleep_time": "0s",
    }
    conf = ["postconf", "-c", str(p)]
    subprocess.run(
        [*conf, "-e", *(f"{k}={v}" for k, v in settings.items())], check=True, capture_output=True
    )
    # Submission on its own port, no chroot (the config is outside /var/spool/postfix).
    subprocess.run([*conf, "-M#", "smtp/inet"], check=True, capture_output=True)
    subprocess.run(
        [
            *conf,
            "-M",
            (
                f"127.0.0.1:{s.submission_port}/inet=127.0.0.1:{s.submission_port} "
                "inet n - n - - smtpd"
            ),
        ],
        check=True,
        capture_output=True,
    )
    subprocess.run([*conf, "-F", "*/*/chroot = n"], check=True, capture_output=True)
    (s.folder / "spool").mkdir()
    (s.folder / "postfix-data").mkdir()
    shutil.chown(s.folder / "postfix-data", "postfix")
    with (s.folder / "postfix.log").open("w", encoding="utf-8") as log:
        s.postfix = subprocess.Popen(
            ["postfix", "-c", str(p), "start-fg"], stdout=log, stderr=subprocess.STDOUT
        )
    _wait_port(s.submission_port, "postfix", s.folder / "postfix.log")
