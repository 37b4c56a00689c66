# The hello world with no Content-Length, as many PSGI apps leave it to
# Plack::Middleware::ContentLength: the server decides how the answer ends.
sub { [ 200, [ 'Content-Type' => 'text/plain' ], ['Hello World!'] ] };
