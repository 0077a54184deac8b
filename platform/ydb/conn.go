package ydb

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"time"

	environ "github.com/ydb-platform/ydb-go-sdk-auth-environ"
	"github.com/ydb-platform/ydb-go-sdk/v3"
	"github.com/ydb-platform/ydb-go-sdk/v3/query"
)

// Conn is a connection to one YDB database, shared by the services of a
// process (each opens its own directory of it with Open). Safe for
// concurrent use.
type Conn struct {
	drv *ydb.Driver
}

// Connect dials the database of dsn: grpc://host:2136/database (plain),
// grpcs://host:2135/database (TLS; a private CA through
// YDB_SSL_ROOT_CERTIFICATES_FILE), or ydb://host:2136/database, taken as
// grpc://. Credentials: user:password in the DSN (static credentials), else
// the environment through ydb-go-sdk-auth-environ — YDB_ACCESS_TOKEN_CREDENTIALS,
// YDB_STATIC_CREDENTIALS_USER/_PASSWORD/_ENDPOINT,
// YDB_SERVICE_ACCOUNT_KEY_FILE_CREDENTIALS, YDB_METADATA_CREDENTIALS=1,
// YDB_OAUTH2_KEY_FILE, or anonymous when none is set.
func Connect(ctx context.Context, dsn string) (*Conn, error) {
	norm, err := NormalizeDSN(dsn)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	drv, err := ydb.Open(ctx, norm,
		environ.WithEnvironCredentials(),
		ydb.WithApplicationName("prsaga"),
		ydb.WithDialTimeout(10*time.Second),
	)
	if err != nil {
		return nil, fmt.Errorf("connect to YDB at %s: %w", Redact(dsn), err)
	}
	// Wait until a session can be had: a wrong endpoint or database fails
	// here, at start, with one clear line.
	if err := drv.Query().Do(ctx, func(context.Context, query.Session) error { return nil }); err != nil {
		_ = drv.Close(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("connect to YDB at %s: %w", Redact(dsn), err)
	}
	return &Conn{drv: drv}, nil
}

// Database is the database's path, e.g. /local.
func (c *Conn) Database() string { return c.drv.Name() }

// Driver is the SDK's driver, for tests and tools.
func (c *Conn) Driver() *ydb.Driver { return c.drv }

// Close closes the connection (after the databases opened on it).
func (c *Conn) Close(ctx context.Context) error { return c.drv.Close(ctx) }

// NormalizeDSN checks a YDB DSN and rewrites ydb:// to grpc://.
func NormalizeDSN(dsn string) (string, error) {
	u, err := url.Parse(dsn)
	if err != nil {
		return "", fmt.Errorf("YDB DSN %q: %w", Redact(dsn), err)
	}
	switch u.Scheme {
	case "ydb":
		u.Scheme = "grpc"
	case "grpc", "grpcs":
	default:
		return "", fmt.Errorf("YDB DSN %q: scheme must be grpc://, grpcs:// or ydb://", Redact(dsn))
	}
	if u.Port() == "" {
		return "", fmt.Errorf("YDB DSN %q: a port is required (2136 for grpc, 2135 for grpcs)", Redact(dsn))
	}
	if strings.Trim(u.Path, "/") == "" && u.Query().Get("database") == "" {
		return "", fmt.Errorf("YDB DSN %q: name the database, e.g. grpc://localhost:2136/local", Redact(dsn))
	}
	return u.String(), nil
}

// IsDSN reports whether s looks like a YDB DSN (one of its schemes).
func IsDSN(s string) bool {
	for _, p := range []string{"ydb://", "grpc://", "grpcs://"} {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// Redact hides a password in a DSN.
func Redact(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil || u.User == nil {
		return dsn
	}
	if _, ok := u.User.Password(); ok {
		u.User = url.UserPassword(u.User.Username(), "***")
	}
	return u.String()
}
