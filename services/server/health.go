package server

import (
	"context"

	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	reflectionv1 "google.golang.org/grpc/reflection/grpc_reflection_v1"
	reflectionv1alpha "google.golang.org/grpc/reflection/grpc_reflection_v1alpha"
)

// ServiceNames are the full names of the services registered on the gRPC
// server (e.g. "syncpod.planner.v1.PlannerService"), without health and
// reflection.
func (s *Server) ServiceNames() []string {
	var out []string
	for name := range s.grpc.GetServiceInfo() {
		switch name {
		case healthpb.Health_ServiceDesc.ServiceName, reflectionv1.ServerReflection_ServiceDesc.ServiceName,
			reflectionv1alpha.ServerReflection_ServiceDesc.ServiceName:
			continue
		}
		out = append(out, name)
	}
	return out
}

// SetServingStatus sets the overall health status ("") and the status of
// every registered service to st: a client asking by a service's own name
// gets the same answer as one asking for the server.
func (s *Server) SetServingStatus(st healthpb.HealthCheckResponse_ServingStatus) {
	s.health.SetServingStatus("", st)
	for _, name := range s.ServiceNames() {
		s.health.SetServingStatus(name, st)
	}
}

// registerServiceHealth runs when Run starts: every service answers under
// its own name from then on. A service that manages its health has set
// "" (and perhaps its own name) already or will; a name not set yet takes
// the overall status, and the service's later SetServingStatus moves all.
func (s *Server) registerServiceHealth() {
	if !s.opts.ServiceManagesHealth {
		s.SetServingStatus(healthpb.HealthCheckResponse_SERVING)
		return
	}
	overall := healthpb.HealthCheckResponse_NOT_SERVING
	if resp, err := s.health.Check(context.Background(), &healthpb.HealthCheckRequest{}); err == nil {
		overall = resp.GetStatus()
	}
	for _, name := range s.ServiceNames() {
		if _, err := s.health.Check(context.Background(), &healthpb.HealthCheckRequest{Service: name}); err != nil {
			s.health.SetServingStatus(name, overall)
		}
	}
}
