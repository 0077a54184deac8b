package server

import "net/http"

// Routes adds the watchers API (httpapi.API.Routes).
func (s *Server) Routes(mux *http.ServeMux) { s.api.Routes(mux) }
