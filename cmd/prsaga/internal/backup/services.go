package backup

import (
	"strings"

	"github.com/prsaga/prsaga/contracts"
)

// services are the services whose databases a backup holds.
var services = []string{contracts.ServiceValidator, contracts.ServiceMerger, contracts.ServiceNotifier, contracts.ServiceIndexer, contracts.ServiceLedger}

func knownService(s string) bool {
	for _, k := range services {
		if k == s {
			return true
		}
	}
	return false
}

// serviceOf is the service whose database holds consumer's inbox: a
// durable is named for its service, or <service>-<what> (validator-lock).
func serviceOf(consumer string) string {
	for _, s := range services {
		if consumer == s || strings.HasPrefix(consumer, s+"-") {
			return s
		}
	}
	return ""
}
