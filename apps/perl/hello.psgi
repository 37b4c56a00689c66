# The PSGI application every Perl server is measured with: the same paths and
# the same bytes as apps/python/hello.py.
#   /        Hello World!
#   /json    a small object serialised per request
#   /big     a 100 KiB body
#   /cpu     about 1 ms of CPU work (iterated SHA-256)
#   /sleep   a 10 ms wait
#   /echo    the request's body back (POST; conformance probes send chunked
#            bodies and Expect: 100-continue to it)
#   /lint    the hello world under Plack::Middleware::Lint
use strict;
use warnings;
use Digest::SHA qw(sha256);
use JSON::PP ();
use Plack::Middleware::Lint;
use Time::HiRes ();

my $body       = 'Hello World!';
my $big        = '0123456789abcdef' x 6400;    # 100 KiB
my $cpu_rounds = 3000;
my $json       = JSON::PP->new->canonical(1);

sub text {
    my ( $content, $type ) = @_;
    return [
        200,
        [ 'Content-Type' => $type // 'text/plain', 'Content-Length' => length $content ],
        [$content],
    ];
}

my %routes = (
    '/json' => sub {
        text( $json->encode( { message => 'Hello, World!', server => 'serverbench', numbers => [ 1, 2, 3 ] } ),
            'application/json' );
    },
    '/big' => sub { text($big) },
    '/cpu' => sub {
        my $digest = 'serverbench';
        $digest = sha256($digest) for 1 .. $cpu_rounds;
        text( unpack 'H*', $digest );
    },
    '/sleep' => sub { Time::HiRes::sleep(0.010); text($body) },
);

sub echo {
    my $env = shift;
    my ( $input, $content ) = ( $env->{'psgi.input'}, '' );
    # A chunked body has no length: read until the server ends the stream.
    while ( $input->read( my $chunk, 65536 ) ) { $content .= $chunk }
    return text( $content, 'application/octet-stream' );
}

# The conformance job's paths: /lint is the hello world under Plack's Lint.
my $linted = Plack::Middleware::Lint->wrap( sub { text($body) } );
my %probed = ( '/echo' => \&echo, '/lint' => $linted );

my $app = sub {
    my $env  = shift;
    my $path = $env->{PATH_INFO} // '/';
    return $probed{$path}->($env) if exists $probed{$path};
    my $route = $routes{$path};
    return $route ? $route->() : text($body);
};

$app;
